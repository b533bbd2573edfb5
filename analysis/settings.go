package analysis

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podCIDRChecks hold kube-proxy's settings against the cluster's facts:
// with the ClusterCIDR local-traffic detector (the default), kube-proxy
// takes a packet for a Pod's only when its source is in the cluster CIDR
// it was given. A Pod of the node outside it (a CNI with its own address
// pool, a pod CIDR changed after the fact) has its connections to Services
// taken for outside traffic: masqueraded, so the backend sees the node's
// address and NetworkPolicies that allow by source do not match. The
// rules are then as kube-proxy's settings ask, and no behaviour differs:
// only the settings against the Pods tell it.
func podCIDRChecks(node, family string, cfg snapshot.ProxyConfig, c *snapshot.Cluster, podCIDRs []string) []behavior.Finding {
	if cfg.DetectLocalMode != "" && cfg.DetectLocalMode != "ClusterCIDR" {
		return nil
	}
	var cidrs []netip.Prefix
	for _, p := range behavior.ParsePrefixes(cfg.ClusterCIDRs) {
		if p.Addr().Is4() == (family != "IPv6") {
			cidrs = append(cidrs, p.Masked())
		}
	}
	if len(cidrs) == 0 {
		// No cluster CIDR: kube-proxy tells no Pod's traffic, and
		// masquerades none for it.
		return nil
	}
	covered := func(p netip.Prefix) bool {
		for _, c := range cidrs {
			if c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	var ranges, pods []string
	for _, s := range podCIDRs {
		if p, err := netip.ParsePrefix(s); err == nil && !covered(p.Masked()) {
			ranges = append(ranges, s)
		}
	}
	for _, p := range nodePodAddrs(c, node, family) {
		if !covered(netip.PrefixFrom(p.addr, p.addr.BitLen())) {
			pods = append(pods, p.String())
		}
	}
	if len(ranges) == 0 && len(pods) == 0 {
		return nil
	}
	var outside []string
	if len(ranges) > 0 {
		outside = append(outside, "the node's pod CIDR "+strings.Join(ranges, ", "))
	}
	if len(pods) > 0 {
		outside = append(outside, wording.Count(len(pods), "Pod", "Pods")+" ("+listSome(pods, 3)+")")
	}
	given := strings.Join(cfg.ClusterCIDRs, ", ")
	rules := []string{"kube-proxy cluster CIDR " + given + " (" + settingsSource(cfg) + ")"}
	for _, p := range pods {
		rules = append(rules, "Pod "+p)
	}
	return []behavior.Finding{{
		Type: behavior.PodCIDRMismatch, Node: node,
		Expected: "the node's Pods inside kube-proxy's cluster CIDR " + given,
		Observed: wording.And(outside) + " outside it",
		Rules:    wording.FirstN(rules, 6),
		Message: fmt.Sprintf("kube-proxy's cluster CIDR (%s) does not cover %s: it takes their connections to Services for traffic from outside the cluster and masquerades them, so backends see the node's address and NetworkPolicies that allow them by source do not match. Set kube-proxy's --cluster-cidr (clusterCIDR) to the Pods' ranges",
			given, wording.And(outside)),
	}}
}

// podAddr is an address of a Pod (not on the host's network).
type podAddr struct {
	pod  string // namespace/name
	addr netip.Addr
}

func (p podAddr) String() string { return p.pod + " " + p.addr.String() }

// nodePodAddrs are the addresses of family of the node's Pods that have
// their own (hostNetwork Pods have the node's); none without API objects.
func nodePodAddrs(c *snapshot.Cluster, node, family string) []podAddr {
	if c == nil {
		return nil
	}
	var out []podAddr
	for i := range c.Pods {
		p := &c.Pods[i]
		if p.Spec.NodeName != node || p.Spec.HostNetwork {
			continue
		}
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil && a.Is4() == (family != "IPv6") {
				out = append(out, podAddr{p.Namespace + "/" + p.Name, a})
			}
		}
	}
	return out
}

// settingsSource says where kube-proxy's settings came from.
func settingsSource(cfg snapshot.ProxyConfig) string {
	for _, e := range cfg.Inferred {
		if strings.HasPrefix(e, "cluster CIDR") {
			return "read off its rules"
		}
	}
	if cfg.Source != "" {
		return "from its " + cfg.Source
	}
	return "as given"
}

// syncChecks: kube-proxy that is not applying changes. Its /healthz turns
// 503 once a change it queued has waited longer than twice its sync
// period; with a change queued after its last successful sync, that is
// kube-proxy's own word that it is stuck (its writes fail, or its syncs
// never end). Whatever the rules show then is what it last managed to
// write: the differences that follow are its consequences.
func syncChecks(node string, s *snapshot.ProxySync) []behavior.Finding {
	// Releases before 1.33 share the sync metrics between the families,
	// so one family's syncs may hide the other's trouble: /healthz, which
	// goes by family, decides.
	if s == nil || s.Healthz != 503 || s.NodeIneligible {
		return nil
	}
	waited := "its /healthz says a change has waited longer than twice its sync period (its metrics, shared by both IP families before 1.33, do not show which)"
	if s.LastQueued.After(s.LastSync) {
		waited = "a change has waited " + s.ReadAt.Sub(s.LastQueued).Round(time.Second).String()
	}
	last := "it has never synced"
	if !s.LastSync.IsZero() {
		last = "its last successful sync ended " + s.ReadAt.Sub(s.LastSync).Round(time.Second).String() + " before the read"
	}
	var why []string
	for _, c := range []struct {
		n    uint64
		what string
	}{{s.RestoreFailures, "failed iptables-restore"}, {s.PartialRestoreFailures, "failed partial iptables-restore"}, {s.NFTablesFailures, "failed nft"}} {
		if c.n > 0 {
			why = append(why, wording.Count(int(c.n), c.what, c.what+"s"))
		}
	}
	cause := "it counts no failed write: a sync that does not end, or a kube-proxy that stopped working, its log tells which"
	if len(why) > 0 {
		cause = "since it started it counts " + wording.And(why) + ": its writes to the kernel fail (its log has the error: a rule the kernel refuses, another program holding the xtables lock)"
	}
	return []behavior.Finding{{
		Type: behavior.KubeProxyNotSyncing, Node: node,
		Expected: "kube-proxy writes the changes it queues (/healthz 200)",
		Observed: "a queued change is not written; /healthz 503",
		Rules:    []string{fmt.Sprintf("kube-proxy metrics at %s: last sync %s, last queued %s", s.ReadAt.Format(time.RFC3339), stamp(s.LastSync), stamp(s.LastQueued))},
		Message: fmt.Sprintf("kube-proxy is not applying changes: %s, %s, and %s. The node's rules are what it last wrote; the other findings of the node follow from it",
			waited, last, cause),
	}}
}

// stamp writes a time, "never" for the zero one.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

// watchLag is how long after an API change kube-proxy may not have queued
// it: its informers deliver in well under a second, and clocks of the API
// server and the node may differ by some seconds.
const watchLag = 30 * time.Second

// watchChecks: kube-proxy that no longer sees the API. A frozen watch
// queues nothing, so its /healthz stays 200; but a Service whose
// differences are findings changed in the API (its objects' last write,
// in managedFields) well after kube-proxy last queued any change: the
// change never reached kube-proxy. fs are the node's findings.
func watchChecks(node string, s *snapshot.ProxySync, c *snapshot.Cluster, fs []behavior.Finding) []behavior.Finding {
	if s == nil || c == nil || s.Healthz == 503 && !s.NodeIneligible || s.LastQueued.IsZero() {
		return nil
	}
	changed := lastChanges(c)
	var late []string
	seen := map[string]bool{}
	for _, f := range fs {
		name := model.ParseServicePortName(f.Service).Service()
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		t := changed[name]
		if t.After(s.LastQueued.Add(watchLag)) && s.ReadAt.Sub(t) >= watchLag {
			late = append(late, name+" at "+t.Format(time.RFC3339))
		}
	}
	if len(late) == 0 {
		return nil
	}
	return []behavior.Finding{{
		Type: behavior.KubeProxyNotSyncing, Node: node,
		Expected: "kube-proxy queues the API's changes as they come",
		Observed: "API changes after its last queued change not seen",
		Rules:    []string{fmt.Sprintf("kube-proxy metrics at %s: last queued %s, last sync %s", s.ReadAt.Format(time.RFC3339), stamp(s.LastQueued), stamp(s.LastSync))},
		Message: fmt.Sprintf("kube-proxy is not following the API: %s changed after its last queued change (%s), and it never queued them, so its watch of the API server is stuck while its /healthz stays %d, since nothing waits. The node's rules are what it saw last: restart kube-proxy, and look for what cut its connection to the API server",
			listSome(late, 3), stamp(s.LastQueued), s.Healthz),
	}}
}

// lastChanges are, by namespace/name, the last changes of each Service
// that kube-proxy must queue: its creation, and the last writes to its
// EndpointSlices (managedFields, else their creation), which their
// controller makes when the endpoints change. A Service's own later
// writes are left out: one to its labels or annotations is no change to
// kube-proxy.
func lastChanges(c *snapshot.Cluster) map[string]time.Time {
	out := map[string]time.Time{}
	note := func(key string, m metav1.ObjectMeta) {
		t := m.CreationTimestamp.Time
		for _, mf := range m.ManagedFields {
			if mf.Time != nil {
				t = later(t, mf.Time.Time)
			}
		}
		out[key] = later(out[key], t)
	}
	for i := range c.Services {
		s := &c.Services[i]
		key := s.Namespace + "/" + s.Name
		out[key] = later(out[key], s.CreationTimestamp.Time)
	}
	for i := range c.EndpointSlices {
		e := &c.EndpointSlices[i]
		if svc := e.Labels[discoveryv1.LabelServiceName]; svc != "" {
			note(e.Namespace+"/"+svc, e.ObjectMeta)
		}
	}
	return out
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
