package analysis

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/snapshot"
)

// serviceRangeFlag is the kube-apiserver flag that holds the Service
// ranges; its static Pod (kubeadm, and most installers that run the
// control plane as Pods) shows it to whoever may list Pods.
const serviceRangeFlag = "--service-cluster-ip-range="

// serviceRanges are the cluster's Service ranges of the family as its API
// servers' Pods give them, with the Pod that said so.
func serviceRanges(c *snapshot.Cluster, family string) ([]netip.Prefix, string) {
	var out []netip.Prefix
	from := ""
	for i := range c.Pods {
		p := &c.Pods[i]
		if p.Namespace != "kube-system" {
			continue
		}
		for _, ct := range p.Spec.Containers {
			for _, arg := range slices.Concat(ct.Command, ct.Args) {
				v, ok := strings.CutPrefix(arg, serviceRangeFlag)
				if !ok {
					continue
				}
				for _, s := range strings.Split(v, ",") {
					pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
					if err != nil || pfx.Addr().Is6() != (family == "IPv6") || slices.Contains(out, pfx.Masked()) {
						continue
					}
					out = append(out, pfx.Masked())
					if from == "" {
						from = "kube-system/" + p.Name
					}
				}
			}
		}
	}
	return out, from
}

// serviceCIDRChecks: the node's Pods, or its pod range, inside the Service
// range. kube-proxy sends every connection to a ClusterIP to the Service's
// endpoints, and in nftables mode drops those to the range's unallocated
// addresses, so a Pod whose address is a ClusterIP is never reached, one
// elsewhere in the range is not in nftables mode, and any may be taken by
// the next ClusterIP allocated. The range comes from the API server's Pod; without it only a
// Pod address that is a Service's ClusterIP proves the overlap.
func serviceCIDRChecks(node, family string, c *snapshot.Cluster, podCIDRs []string) []behavior.Finding {
	if c == nil {
		return nil
	}
	ranges, from := serviceRanges(c, family)
	clusterIPs := map[netip.Addr]string{}
	for i := range c.Services {
		s := &c.Services[i]
		for _, ip := range s.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				clusterIPs[a] = s.Namespace + "/" + s.Name
			}
		}
	}
	inRange := func(a netip.Addr) bool {
		for _, r := range ranges {
			if r.Contains(a) {
				return true
			}
		}
		return false
	}
	var what, rules []string
	for _, s := range podCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		for _, r := range ranges {
			if r.Overlaps(p) {
				what = append(what, "the node's pod CIDR "+s)
				rules = append(rules, "Node pod CIDR "+s)
				break
			}
		}
	}
	var pods []string
	for _, p := range nodePodAddrs(c, node, family) {
		svc, isClusterIP := clusterIPs[p.addr]
		switch {
		case isClusterIP:
			pods = append(pods, p.String()+" = ClusterIP of "+svc)
		case inRange(p.addr):
			pods = append(pods, p.String())
		}
	}
	if len(pods) > 0 {
		what = append(what, wording.Count(len(pods), "Pod", "Pods")+" ("+listSome(pods, 3)+")")
		for _, p := range pods {
			rules = append(rules, "Pod "+p)
		}
	}
	if len(what) == 0 {
		return nil
	}
	rng, holds := "the Services' ClusterIPs", "Services' ClusterIPs are the addresses of "+wording.And(what)
	if len(ranges) > 0 {
		var rs []string
		for _, r := range ranges {
			rs = append(rs, r.String())
		}
		rng = "the Service range " + strings.Join(rs, ", ")
		holds = "The Service range " + strings.Join(rs, ", ") + " (" + strings.TrimSuffix(serviceRangeFlag, "=") + " of " + from + ") holds " + wording.And(what)
		rules = append([]string{"Service range " + strings.Join(rs, ", ") + " from " + from}, rules...)
	}
	return []behavior.Finding{{
		Type: behavior.ServiceCIDROverlap, Node: node,
		Expected: "the node's Pods outside " + rng,
		Observed: wording.And(what) + " inside it",
		Rules:    wording.FirstN(rules, 6),
		Message:  holds + ": a Pod whose address is also a ClusterIP is never reached (kube-proxy sends connections to it to the Service's endpoints), in nftables mode kube-proxy drops connections to every other address of the Service range, and each ClusterIP the API server allocates may take a Pod's address. Give the Pods (the CNI's address pool, --pod-network-cidr) a range apart from the Service range",
	}}
}
