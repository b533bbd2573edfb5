package ipvs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// Plane is the IPVS table of one node and family.
type Plane struct {
	table     *Table
	family    string
	nodeAddrs map[netip.Addr]bool
}

var (
	_ dataplane.Plane     = (*Plane)(nil)
	_ dataplane.Unchecked = (*Plane)(nil)
)

// Unchecked: the walk reads the IPVS table only, not the iptables rules
// and ipsets of ipvs mode, which decide masquerading, the firewall and
// NodePorts' local traffic; held against the model its outcomes would
// show differences that are not there.
func (p *Plane) Unchecked() string {
	return "drift in ipvs mode is not checked yet: svctrace reads the IPVS table (explain and trace show it), but not yet the iptables rules and ipsets of ipvs mode that decide masquerading and the firewall"
}

// Table is the plane's IPVS table.
func (p *Plane) Table() *Table { return p.table }

// Mode is "ipvs".
func (p *Plane) Mode() string { return "ipvs" }

// HasKubeProxy: kube-proxy's objects are virtual servers (the table holds
// nothing else in a cluster).
func (p *Plane) HasKubeProxy() bool { return len(p.table.Virtuals) > 0 }

// Frontends are the virtual servers with an address: a NodePort when the
// address is one of the node's, a ClusterIP otherwise (the model names
// external and load-balancer addresses, which IPVS does not tell apart).
func (p *Plane) Frontends() []behavior.Frontend {
	var out []behavior.Frontend
	for _, v := range p.table.Virtuals {
		if v.Protocol == "" {
			continue
		}
		kind := behavior.ClusterIP
		if p.nodeAddrs[v.Addr.Addr()] {
			kind = behavior.NodePort
		}
		out = append(out, behavior.Frontend{Key: behavior.Key{Kind: kind, IP: v.Addr.Addr().String(), Port: int32(v.Addr.Port()), Protocol: v.Protocol}})
	}
	return out
}

// Checks are the table's own troubles, without the API objects: none yet
// (those of ipvs mode need the model: a ready endpoint at weight 0, a
// virtual server of a deleted Service).
func (p *Plane) Checks(node, mode string) []behavior.Finding { return nil }

// Leftovers reports virtual servers while kube-proxy runs in another
// mode: they still answer for their addresses where those are local.
func (p *Plane) Leftovers(node, activeMode string) []behavior.Finding {
	if activeMode == p.Mode() || !p.HasKubeProxy() {
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

// Describe shows a hop: the virtual server, or the real server it chose.
func (p *Plane) Describe(h dataplane.Hop) dataplane.HopInfo {
	info := dataplane.HopInfo{Text: "ipvs " + h.Rule, ByLine: true}
	if strings.HasPrefix(h.Rule, "-> ") {
		info.Text = "ipvs " + h.Chain + " " + h.Rule
		info.Endpoint = strings.Fields(h.Rule)[1]
	}
	return info
}

// OwnsRule: IPVS names no Service, so no rule is known to be a Service's
// by its name.
func (p *Plane) OwnsRule(behavior.Rule, []string) bool { return false }

// Infer says the mode; the rest of kube-proxy's settings are not in the
// IPVS table.
func (p *Plane) Infer() dataplane.Inferred {
	return dataplane.Inferred{Mode: "ipvs", Evidence: []string{fmt.Sprintf("%d IPVS virtual servers", len(p.table.Virtuals))}}
}

// Notes say what the table alone cannot tell.
func (p *Plane) Notes() []string {
	out := append([]string(nil), p.table.Notes...)
	return append(out, "ipvs: only the IPVS table is read: whether a connection is masqueraded, and the firewall of source ranges, are decided by ipvs mode's iptables rules and ipsets, which this svctrace does not walk yet")
}
