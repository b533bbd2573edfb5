package ipvs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// Plane is ipvs mode on one node and family: the IPVS table and, when
// the node's state holds them, the iptables rules ipvs mode keeps, its
// ipsets and the addresses on kube-ipvs0. With all of those the walk is
// the kernel's whole path; with the IPVS table alone it is only the
// virtual server's choice, and drift is not checked.
type Plane struct {
	table  *Table
	family string
	// gates judges packets by other components' nftables tables (see
	// WithGate); nil: none known.
	gates dataplane.GateGiver
	// nodeAddrs are the node's own addresses, without those bound on
	// kube-ipvs0 (the virtual addresses).
	nodeAddrs map[netip.Addr]bool
	// rules are ipvs mode's iptables rules (nil: not in the state).
	rules *iptables.Plane
	// sets are the node's ipsets (nil: not in the state).
	sets *IPSets
	// vips are the addresses on kube-ipvs0, when vipsKnown; isVIP looks
	// them up in vipSet (a node has one per Service address).
	vips      []netip.Prefix
	vipSet    map[netip.Addr]bool
	vipsKnown bool
	// noTable: the state has no IPVS table, only the sets or kube-ipvs0
	// (see shown.go); shown are the frontends the sets name, and
	// shownNotes what the reading of them says.
	noTable    bool
	shown      []shownFrontend
	shownNotes []string
	// shared digests what every walk may read beside the virtual servers,
	// when sharedKnown (see StateParts).
	shared      uint64
	sharedKnown bool
	// index finds the table's virtual servers (see virtual), once made.
	index     map[virtualKey]*Virtual
	indexOnce sync.Once
}

var (
	_ dataplane.Plane     = (*Plane)(nil)
	_ dataplane.Unchecked = (*Plane)(nil)
)

// Unchecked says what of the mode's state is missing for the walk to be
// the kernel's whole path ("" when nothing is): without ipvs mode's
// iptables rules and ipsets, which decide masquerading and the firewall,
// and the addresses on kube-ipvs0, which decide whether IPVS sees a packet
// at all, its outcomes held against the model would show differences that
// are not there.
func (p *Plane) Unchecked() string {
	var missing []string
	if p.noTable {
		return "drift in ipvs mode is not checked: the node's state has no IPVS table (ipvsadm -Ln), which holds where each Service's connections go"
	}
	if p.rules == nil {
		missing = append(missing, "the iptables rules ("+p.family+" iptables-save)")
	}
	if p.sets == nil {
		missing = append(missing, "the ipsets (ipset save)")
	}
	if !p.vipsKnown {
		missing = append(missing, "the addresses on kube-ipvs0 (ip addr show dev kube-ipvs0)")
	}
	why := ""
	if len(missing) > 0 {
		why = "the node's state has the IPVS table but not " + strings.Join(missing, ", ") + ", which decide together with it where a packet goes"
	}
	if n := p.table.redactions(); n > 0 {
		why = strings.TrimPrefix(why+fmt.Sprintf("; the dump's author redacted %d of the IPVS table's addresses", n), "; ")
	}
	if why == "" {
		return ""
	}
	return "drift in ipvs mode is not checked: " + why + "; explain and trace show the IPVS table alone"
}

// Walker walks a packet through ipvs mode's iptables rules (with the
// ipsets they match), the IPVS lookup at local input for an address on
// kube-ipvs0 or the node, then output and postrouting with the real
// server as destination. Without all of those (Unchecked), only the IPVS
// table.
func (p *Plane) Walker(env *dataplane.Env) dataplane.Walker {
	if p.Unchecked() != "" {
		return &Walker{p: p, env: env}
	}
	local := &dataplane.Env{}
	if env != nil {
		*local = *env
	}
	local.LocalAddrs = slices.Clone(local.LocalAddrs)
	for _, v := range p.vips {
		local.LocalAddrs = append(local.LocalAddrs, v.Addr())
	}
	ext := iptables.Extensions{Sets: p.sets, LocalIn: p.lookup, LocalInPart: lookupPart}
	if p.gates != nil {
		ext.Gate = p.gates.Gate(local)
	}
	return iptables.NewWalkerWith(p.rules.Rules, local, ext)
}

// WithGate implements dataplane.GateTaker: the walks consult g's Gate
// after the iptables tables of each hook.
func (p *Plane) WithGate(g dataplane.GateGiver) { p.gates = g }

// Table is the plane's IPVS table.
func (p *Plane) Table() *Table { return p.table }

// Mode is "ipvs".
func (p *Plane) Mode() string { return "ipvs" }

// HasKubeProxy: kube-proxy's objects are virtual servers (the table holds
// nothing else in a cluster), or, in a family without a Service, the
// filter chain only ipvs mode makes (KUBE-IPVS-FILTER), which its
// proxier of that family writes on every sync.
func (p *Plane) HasKubeProxy() bool {
	if p.noTable {
		return len(p.shown) > 0 || p.vipsKnown || p.sets.kubeProxys()
	}
	if len(p.table.Virtuals) > 0 {
		return true
	}
	return p.rules != nil && p.rules.Rules.Chain("filter", "KUBE-IPVS-FILTER") != nil
}

// Frontends are the virtual servers with an address: a NodePort when the
// address is one of the node's (not one bound on kube-ipvs0), a ClusterIP
// otherwise (the model names external and load-balancer addresses, which
// IPVS does not tell apart).
func (p *Plane) Frontends() []behavior.Frontend {
	var out []behavior.Frontend
	for _, f := range p.shown {
		out = append(out, behavior.Frontend{Key: f.key})
	}
	for _, v := range p.table.Virtuals {
		if v.Protocol != "" {
			out = append(out, behavior.Frontend{Key: p.key(v)})
		}
	}
	return out
}

// key is the frontend of a virtual server with an address.
func (p *Plane) key(v *Virtual) behavior.Key {
	kind := behavior.ClusterIP
	if nodePort, _ := p.isNodePort(v); nodePort {
		kind = behavior.NodePort
	}
	return behavior.Key{Kind: kind, IP: v.Addr.Addr().String(), Port: int32(v.Addr.Port()), Protocol: v.Protocol}
}

// isNodePort tells a NodePort's virtual server from a Service address's:
// ipvs mode opens a NodePort on the node's own addresses, loopback
// included, and binds every cluster, external and load-balancer address
// on kube-ipvs0 (one missing there is drift, not a NodePort). With
// neither the node's addresses nor kube-ipvs0's in the state, a port in
// the default NodePort range is taken for a NodePort, and guessed says
// so.
func (p *Plane) isNodePort(v *Virtual) (nodePort, guessed bool) {
	a := v.Addr.Addr()
	switch {
	case p.nodeAddrs[a], a.IsLoopback():
		return true, false
	case !p.vipsKnown && len(p.nodeAddrs) == 0 && v.Addr.Port() >= 30000 && v.Addr.Port() <= 32767:
		return true, true
	}
	return false, false
}

// guessedNodePorts say which virtual servers were taken for NodePorts by
// their port alone.
func (p *Plane) guessedNodePorts() []string {
	var out []string
	for _, v := range p.table.Virtuals {
		if _, guessed := p.isNodePort(v); guessed && v.Protocol != "" {
			out = append(out, fmt.Sprintf("virtual server %s %s taken for a NodePort: its port is in the default NodePort range (30000-32767), and the state has neither the node's addresses nor kube-ipvs0's, which would tell", v.Protocol, v.Addr))
		}
	}
	return out
}

// Checks are the mode's own troubles that need no API objects: a virtual
// server whose scheduler differs from the node's others, one whose
// address is bound nowhere on the node (IPVS never sees its packets), an
// address on kube-ipvs0 no virtual server serves, and kube-proxy's ipsets
// lacking a virtual server's member or holding one of none.
func (p *Plane) Checks(node, mode string) []behavior.Finding {
	out := schedulerChecks(p, node)
	if !p.vipsKnown || p.noTable || p.table.redactions() > 0 {
		return out
	}
	return append(append(out, vipChecks(p, node)...), setChecks(p, node)...)
}

// Leftovers reports virtual servers while kube-proxy runs in another
// mode: they still answer for their addresses where those are local.
func (p *Plane) Leftovers(node, activeMode string) []behavior.Finding {
	if activeMode == p.Mode() || p.noTable || !p.HasKubeProxy() {
		return nil
	}
	return []behavior.Finding{{
		Type: behavior.LeftoverRules, Node: node,
		Expected: "no IPVS virtual server",
		Observed: fmt.Sprintf("%d IPVS virtual servers", len(p.table.Virtuals)),
		Message:  fmt.Sprintf("kube-proxy runs in %s mode, but %d IPVS virtual servers of ipvs mode are still there: a leftover, which still takes connections to addresses bound on the node", activeMode, len(p.table.Virtuals)),
	}}
}

// Conflicts: an IPVS table has none of its own.
func (p *Plane) Conflicts(string) []behavior.Finding { return nil }

// Describe shows a hop: the virtual server, the real server it chose, or
// a rule of ipvs mode's iptables rules.
func (p *Plane) Describe(h dataplane.Hop) dataplane.HopInfo {
	if h.Table != "ipvs" && p.rules != nil {
		return p.rules.Describe(h)
	}
	if h.Table == "ipset" {
		return dataplane.HopInfo{Text: "ipset " + h.Rule, ByLine: true}
	}
	info := dataplane.HopInfo{Text: "ipvs " + h.Rule, ByLine: true}
	if strings.HasPrefix(h.Rule, "-> ") {
		info.Text = "ipvs " + h.Chain + " " + h.Rule
		if ap, err := netip.ParseAddrPort(strings.Fields(h.Rule)[1]); err == nil {
			info.Endpoint = ap.String() // none for a redacted address
		}
	}
	return info
}

// OwnsRule: IPVS names no Service, so no rule is known to be a Service's
// by its name.
func (p *Plane) OwnsRule(behavior.Rule, []string) bool { return false }

// Infer says the mode and what ipvs mode's iptables rules tell of
// kube-proxy's settings (the masquerade mark, the cluster CIDR). The
// addresses NodePorts open on are those of the virtual servers not bound on
// kube-ipvs0: kube-proxy makes one per node address.
func (p *Plane) Infer() dataplane.Inferred {
	in := dataplane.Inferred{}
	if p.rules != nil {
		in = p.rules.Infer()
	}
	in.Mode = "ipvs"
	if p.noTable {
		in.Evidence = append(in.Evidence, "kube-proxy's ipvs-mode ipsets or kube-ipvs0 (no IPVS table)")
		return in
	}
	in.Evidence = append(in.Evidence, fmt.Sprintf("%d IPVS virtual servers", len(p.table.Virtuals)))
	if len(in.ClusterCIDRs) == 0 && p.rules != nil {
		if cidr, line := p.clusterCIDR(); cidr != "" {
			in.ClusterCIDRs = []string{cidr}
			in.Evidence = append(in.Evidence, fmt.Sprintf("cluster CIDR %s: line %d (KUBE-SERVICES, ipvs mode's ClusterIP masquerade rule)", cidr, line))
		} else if iface, line := p.localIface(); iface != "" {
			in.LocalIface(iface, "+")
			in.Evidence = append(in.Evidence, fmt.Sprintf("local traffic by input interface %s: line %d (KUBE-SERVICES, ipvs mode's ClusterIP masquerade rule)", iface, line))
		}
	}
	if p.vipsKnown {
		in.NodePortIPs, in.NodePortIPsKnown = p.nodePortIPs(), true
	}
	return in
}

// nodePortIPs are the addresses of the virtual servers that are the
// node's (when the node's addresses are known), else not on kube-ipvs0,
// in order.
func (p *Plane) nodePortIPs() []string {
	out := []string{}
	seen := map[netip.Addr]bool{}
	for _, v := range p.table.Virtuals {
		a := v.Addr.Addr()
		if v.Protocol == "" || seen[a] || p.isVIP(a) || len(p.nodeAddrs) > 0 && !p.nodeAddrs[a] {
			continue
		}
		seen[a] = true
		out = append(out, a.String())
	}
	return out
}

func (p *Plane) isVIP(a netip.Addr) bool { return p.vipSet[a] }

// Notes say what the reader did not understand, and what the walk leaves
// out.
func (p *Plane) Notes() []string {
	out := append([]string(nil), p.table.Notes...)
	if note := p.shownNote(); note != "" {
		out = append(out, note)
	}
	if p.sets != nil {
		out = append(out, p.sets.Notes...)
	}
	out = append(out, p.shownNotes...)
	if p.noTable {
		out = append(out, p.vipNotes()...)
	}
	if p.rules != nil {
		out = append(out, p.rules.Notes()...)
	}
	out = append(out, p.guessedNodePorts()...)
	if why := p.Unchecked(); why != "" {
		out = append(out, why)
	}
	return out
}
