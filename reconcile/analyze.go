package reconcile

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// NodeAnalysis is everything svctrace derives for one node and IP family:
// the parsed rules, kube-proxy's settings, the model's view, and the
// expected and observed behaviour.
type NodeAnalysis struct {
	Node   string
	Family string
	// Config is kube-proxy's settings as told by the snapshot, completed
	// from the rules (Config.Inferred says what was inferred).
	Config inspect.ProxyConfig
	// View is nil without API objects (a bare dump).
	View *model.NodeView
	// Plane is the kernel state of kube-proxy's data plane: for iptables,
	// the backend that holds kube-proxy's chains.
	Plane    dataplane.Plane
	NodeIPs  []netip.Addr
	Expected *behavior.Table
	Observed *behavior.Table
	// Findings are behavioural differences plus text-level checks; nil
	// Expected means only text-level checks ran.
	Findings []behavior.Finding
	Notes    []string
}

// Analyze parses a node's iptables dumps of one family and compares them
// with the model.
func Analyze(s *inspect.Snapshot, node, family string) (*NodeAnalysis, error) {
	ns, ok := s.Node(node)
	if !ok {
		return nil, fmt.Errorf("node %q is not in the snapshot (it has: %s)", node, nodeNames(s))
	}
	a := &NodeAnalysis{Node: node, Family: family, Config: ns.KubeProxy}
	byBackend, err := parseDumps(ns, family)
	if err != nil {
		return nil, err
	}
	rules := pickRuleset(byBackend)
	if rules == nil {
		return nil, fmt.Errorf("node %s: the snapshot holds no %s iptables dump", node, family)
	}
	a.Plane = &iptables.Plane{Rules: rules}
	if legacy, nft := byBackend["legacy"], byBackend["nf_tables"]; legacy != nil && nft != nil {
		a.Findings = append(a.Findings, iptables.SplitBrain(node, legacy, nft)...)
	}
	if !a.Plane.HasKubeProxy() && a.Config.Mode != a.Plane.Mode() {
		return nil, fmt.Errorf("node %s: its iptables dumps hold no kube-proxy chains; if kube-proxy runs there in nftables or ipvs mode, this svctrace cannot read that data plane yet (tell it the mode is iptables with --proxy-mode on import to check an empty node)", node)
	}
	a.Notes = append(a.Notes, a.Plane.Notes()...)
	a.inferConfig()
	if s.Cluster != nil {
		v, err := model.BuildNodeView(s.Cluster, node, family)
		if err != nil {
			return nil, fmt.Errorf("building kube-proxy's view of node %s: %w", node, err)
		}
		a.View = v
	}
	a.NodeIPs = nodeIPs(a.View, ns, family)
	in := dataplane.ObserveInput{Node: node, Family: family, NodeIPs: a.NodeIPs, ClusterCIDRs: behavior.ParsePrefixes(a.Config.ClusterCIDRs)}
	if a.View != nil {
		if len(a.View.NodeIPs) == 0 && len(ns.Addresses) > 0 {
			a.View.NodeIPs = ns.Addresses
		}
		a.Expected = Expected(a.View, a.Config)
		in.Expected = a.Expected.Frontends
	}
	a.Observed = dataplane.Observe(a.Plane, in)
	if a.Expected != nil {
		a.Findings = append(a.Findings, Compare(a.Expected, a.Observed)...)
	} else {
		a.Notes = append(a.Notes, "no API objects in the snapshot: behaviour is read from the rules alone, and only text-level checks run")
	}
	a.Findings = foldOrphans(append(a.Findings, a.Plane.Checks(node, a.Config.Mode)...))
	a.Findings = behavior.Merge(a.Findings)
	return a, nil
}

// foldOrphans attaches an orphaned endpoint chain to the MissingEndpoint
// finding it explains (the jump to it was lost), instead of reporting the
// one fault twice.
func foldOrphans(fs []behavior.Finding) []behavior.Finding {
	var out []behavior.Finding
	missing := map[string]int{}
	for i, f := range fs {
		if f.Type == behavior.MissingEndpoint {
			missing[f.Service+" "+f.Expected] = i
		}
	}
	folded := map[int]bool{}
	for i, f := range fs {
		if f.Type != behavior.OrphanChain {
			continue
		}
		for _, r := range f.Rules {
			_, ep, ok := strings.Cut(r, "--to-destination ")
			if !ok {
				continue
			}
			ep, _, _ = strings.Cut(ep, " ")
			if j, ok := missing[f.Service+" "+ep]; ok {
				fs[j].Rules = append(fs[j].Rules, "orphaned: "+f.Observed)
				folded[i] = true
			}
		}
	}
	for i, f := range fs {
		if !folded[i] {
			out = append(out, f)
		}
	}
	return out
}

func (a *NodeAnalysis) inferConfig() {
	in := a.Plane.Infer()
	if a.Config.Mode == "" && in.Mode != "" {
		a.Config.Mode = in.Mode
		a.Config.Inferred = append(a.Config.Inferred, "mode: "+in.Mode+" (kube-proxy's objects are in "+a.Plane.Mode()+")")
	}
	detector := a.Config.DetectLocalMode == "" || a.Config.DetectLocalMode == "ClusterCIDR"
	if detector && len(a.Config.ClusterCIDRs) == 0 && len(in.ClusterCIDRs) > 0 {
		a.Config.ClusterCIDRs = in.ClusterCIDRs
		for _, e := range in.Evidence {
			if strings.HasPrefix(e, "cluster CIDR") {
				a.Config.Inferred = append(a.Config.Inferred, e)
			}
		}
	}
	if a.Config.MasqueradeBit == nil && in.MasqueradeBit != 0 {
		b := in.MasqueradeBit
		a.Config.MasqueradeBit = &b
		a.Config.Inferred = append(a.Config.Inferred, fmt.Sprintf("masquerade bit: %d (read off the masquerade mark rule)", b))
	}
	if len(a.Config.Inferred) > 0 && a.Config.Source == "" {
		a.Config.Source = "inferred"
	}
}

// parseDumps parses a node's iptables dumps of one family, keyed by backend.
func parseDumps(ns *inspect.NodeState, family string) (map[string]*iptables.Ruleset, error) {
	out := map[string]*iptables.Ruleset{}
	for _, d := range ns.Dumps {
		if d.Collector != inspect.CollectorIPTablesSave && d.Collector != inspect.CollectorIP6TablesSave {
			continue
		}
		fam := d.Family
		if fam == "" {
			fam = "IPv4"
			if d.Collector == inspect.CollectorIP6TablesSave {
				fam = "IPv6"
			}
		}
		if fam != family {
			continue
		}
		origin := d.Origin
		if origin == "" {
			origin = fmt.Sprintf("node %s %s dump", ns.Name, d.Collector)
		}
		rs, err := iptables.ParseString(origin, d.Text, iptables.ParseOptions{Table: d.Table, Family: fam})
		if err != nil {
			return nil, err
		}
		backend := d.Backend
		if backend == "" {
			backend = rs.Backend
		}
		if backend == "" {
			backend = "unknown"
		}
		if prev, ok := out[backend]; ok {
			mergeRulesets(prev, rs)
			continue
		}
		out[backend] = rs
	}
	return out, nil
}

// mergeRulesets adds the tables of b to a (several headerless dumps of one
// node, one per table).
func mergeRulesets(a, b *iptables.Ruleset) {
	for _, name := range b.TableOrder {
		if _, ok := a.Tables[name]; !ok {
			a.Tables[name] = b.Tables[name]
			a.TableOrder = append(a.TableOrder, name)
		}
	}
	a.Notes = append(a.Notes, b.Notes...)
}

// pickRuleset chooses the backend holding kube-proxy's chains.
func pickRuleset(m map[string]*iptables.Ruleset) *iptables.Ruleset {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var best *iptables.Ruleset
	for _, k := range keys {
		rs := m[k]
		if best == nil || iptables.HasKubeChains(rs) && !iptables.HasKubeChains(best) {
			best = rs
		}
	}
	return best
}

func nodeIPs(v *model.NodeView, ns *inspect.NodeState, family string) []netip.Addr {
	var src []string
	if v != nil {
		src = v.NodeIPs
	}
	if len(src) == 0 {
		src = ns.Addresses
	}
	var out []netip.Addr
	for _, s := range src {
		a, err := netip.ParseAddr(s)
		if err != nil || (family == "IPv6") != a.Is6() {
			continue
		}
		out = append(out, a)
	}
	return out
}

func nodeNames(s *inspect.Snapshot) string {
	if len(s.Nodes) == 0 {
		return "no nodes"
	}
	var names []string
	for _, n := range s.Nodes {
		names = append(names, n.Name)
	}
	return fmt.Sprint(names)
}

// ValidateDumps parses every dump of a snapshot, so that a damaged capture
// is refused when it is imported, with the line of the fault.
func ValidateDumps(s *inspect.Snapshot) error {
	for i := range s.Nodes {
		for _, fam := range []string{"IPv4", "IPv6"} {
			if _, err := parseDumps(&s.Nodes[i], fam); err != nil {
				return err
			}
		}
	}
	return nil
}
