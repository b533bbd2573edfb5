package ipvs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/proxyrelease"
)

var _ dataplane.RepairPlanner = Loader{}

// The kube-proxy releases whose ipvs state the render programs: the lab's
// VM node runs v1.30.14, v1.36.3 and v1.37.2 (TestReleasesIPVS,
// TestReconcileIPVS), which program the same; the releases between are
// taken to.
const layoutOldest, layoutNewest = 30, 37

// checkVersion refuses a kube-proxy whose ipvs layout the render does not
// know.
func checkVersion(version string) error {
	minor, ok := proxyrelease.Minor(version)
	if !ok || minor < layoutOldest || minor > layoutNewest {
		return fmt.Errorf("kube-proxy %s: svctrace renders the ipvs layout of %s, and a release outside them may program it otherwise", version, proxyrelease.Span(layoutOldest, layoutNewest))
	}
	return nil
}

// repairTarget is what a plan hands its write: the render and the
// iptables backend kube-proxy uses.
type repairTarget struct {
	target  *Target
	backend string
}

// PlanRepair renders ipvs mode's state for the view and compares it with
// the node's: the IPVS table, the ipsets, kube-ipvs0's addresses and the
// iptables rules of the mode. A repair needs all four in the node's state.
func (Loader) PlanRepair(in dataplane.RepairInput) (*dataplane.RepairPlan, bool, error) {
	if err := checkVersion(in.Version); err != nil {
		return nil, false, err
	}
	pl, err := Loader{}.Load(in.State, in.Family)
	if err != nil {
		return nil, false, err
	}
	p, _ := pl.(*Plane)
	if p == nil {
		return nil, false, nil
	}
	if len(p.table.Virtuals) == 0 && len(in.View.Ports) == 0 {
		return &dataplane.RepairPlan{Family: in.Family, Service: in.Service,
			Notes: []string{"no virtual server of this family is in the kernel and no Service has an address of it: left alone"}}, true, nil
	}
	if p.sets == nil || !p.vipsKnown {
		return nil, false, fmt.Errorf("a repair in ipvs mode compares the IPVS table, the ipsets, the addresses on %s and the iptables rules together: %s", Dummy, p.Unchecked())
	}
	rules, backend, ok, err := iptables.NodeOwnedLayout(in.State, in.Family, in.Backend, Ownership)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, fmt.Errorf("a repair in ipvs mode needs the node's %s iptables rules, which its state lacks", in.Family)
	}
	s, notes := settings(in, p, rules)
	t := Render(in.View, s)
	cur := &State{Virtuals: p.table.Virtuals, Sets: p.sets, Addrs: p.vips, Rules: rules}
	d := diff(cur, t, in.Service)
	// The dry run shows the refusal a write would meet.
	if err := d.checkRules(); err != nil {
		return nil, false, err
	}
	plan := &dataplane.RepairPlan{Family: in.Family, Backend: backend, Service: in.Service,
		Notes: append(notes, d.notes...), Target: &repairTarget{target: t, backend: backend}}
	plan.Changes = d.changes(t)
	plan.Payload = d.payload(in.Family)
	return plan, true, nil
}

// settings are the render's settings: kube-proxy's configuration where
// it is known, else what the node's state shows (the scheduler its
// virtual servers share, --random-fully on its MASQUERADE rule, the
// cluster CIDR of its masquerade rule). Notes say what was assumed.
func settings(in dataplane.RepairInput, p *Plane, rules *iptables.Layout) (RenderSettings, []string) {
	s := RenderSettings{Family: in.Family, MasqueradeBit: 14, MasqueradeAll: in.Config.MasqueradeAll, RandomFully: true}
	var notes []string
	if in.Config.MasqueradeBit != nil {
		s.MasqueradeBit = *in.Config.MasqueradeBit
	}
	if len(in.NodeIPs) > 0 {
		s.NodeIP, _ = netip.ParseAddr(in.NodeIPs[0])
	}
	count := map[string]int{}
	for _, v := range p.table.Virtuals {
		count[v.Scheduler]++
	}
	for sched, n := range count {
		if n > count[s.Scheduler] || n == count[s.Scheduler] && sched < s.Scheduler {
			s.Scheduler = sched
		}
	}
	if s.Scheduler == "" {
		s.Scheduler = "rr"
		notes = append(notes, "no virtual server shows the scheduler: assumed kube-proxy's default, rr (--ipvs-scheduler)")
	}
	switch in.Config.DetectLocalMode {
	case "", "ClusterCIDR":
		cidr := dataplane.CIDROfFamily(in.Config.ClusterCIDRs, in.Family)
		if cidr == "" && p.rules != nil {
			cidr, _ = p.clusterCIDR()
		}
		if cidr != "" {
			s.NotLocal = "! -s " + cidr
		}
	case "NodeCIDR":
		if cidr := dataplane.CIDROfFamily(in.PodCIDRs, in.Family); cidr != "" {
			s.NotLocal = "! -s " + cidr
		}
	case "BridgeInterface":
		if in.Config.BridgeInterface != "" {
			s.NotLocal = "! -i " + in.Config.BridgeInterface
		}
	case "InterfaceNamePrefix":
		if in.Config.InterfaceNamePrefix != "" {
			s.NotLocal = "! -i " + in.Config.InterfaceNamePrefix + "+"
		}
	}
	if s.NotLocal == "" && !s.MasqueradeAll && len(in.View.Ports) > 0 {
		notes = append(notes, "no cluster CIDR is known (none in kube-proxy's configuration or rules): the ClusterIP masquerade rule is rendered without the local-traffic detector, as kube-proxy writes it then; give --cluster-cidr if the node's kube-proxy has one")
	}
	masq := false
	for _, x := range rules.Tables["nat"].Chains["KUBE-POSTROUTING"] {
		if strings.Contains(x, " -j MASQUERADE") && strings.Contains(x, "service traffic requiring SNAT") {
			s.RandomFully, masq = strings.Contains(x, "--random-fully"), true
		}
	}
	if !masq {
		notes = append(notes, "kube-proxy's MASQUERADE rule is absent: assumed --random-fully, as kube-proxy has it on a current kernel")
	}
	s.NodePortIPs, s.NodeAddrs = nodePortIPs(in, p)
	return s, notes
}

// nodePortIPs are the addresses a NodePort gets a virtual server on: those
// --nodeport-addresses selects, else every address of the node of the
// family but loopback, IPv6 link-local, cluster IPs and those on
// kube-ipvs0; and all those addresses of the node.
func nodePortIPs(in dataplane.RepairInput, p *Plane) (selected, all []netip.Addr) {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	// A cluster IP is kube-ipvs0's, never the node's: one missing there
	// is not taken for a node address.
	for _, sp := range in.View.Ports {
		if a, err := netip.ParseAddr(sp.ClusterIP); err == nil {
			seen[a] = true
		}
	}
	add := func(a netip.Addr) {
		if !seen[a] && !a.IsLoopback() && !(a.Is6() && a.IsLinkLocalUnicast()) && !p.isVIP(a) && a.Is4() == (in.Family == "IPv4") {
			seen[a] = true
			out = append(out, a)
		}
	}
	every := len(in.Config.NodePortAddresses) == 0
	var prefixes []netip.Prefix
	for _, sel := range in.Config.NodePortAddresses {
		if sel == "primary" {
			for _, ip := range in.NodeIPs {
				if a, err := netip.ParseAddr(ip); err == nil {
					add(a)
				}
			}
			continue
		}
		if pf, err := netip.ParsePrefix(sel); err == nil && pf.Addr().Is4() == (in.Family == "IPv4") {
			if pf.Bits() == 0 {
				every = true
			}
			prefixes = append(prefixes, pf)
		}
	}
	var node []netip.Addr
	listed := map[netip.Addr]bool{}
	for _, ip := range append(append([]string{}, in.NodeIPs...), in.LocalAddrs...) {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		if !listed[a] && !a.IsLoopback() && !p.isVIP(a) && a.Is4() == (in.Family == "IPv4") {
			listed[a] = true
			node = append(node, a)
		}
		if every {
			add(a)
			continue
		}
		for _, pf := range prefixes {
			if pf.Contains(a) {
				add(a)
			}
		}
	}
	return out, node
}
