package ipvs

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/plugins/iptables"
)

// kube-proxy's ipvs proxier accepts a connection to an external IP in nat
// KUBE-SERVICES in two rules (shared/kube-proxy-dataplane.md, ipvs rule
// 4):
//
//	-m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT
//	-m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT
//
// The iptables walk cannot evaluate the first (whether a packet came in
// through a bridge port is not in a node's state: from outside it did
// not, from a pod it depends on the CNI) and takes it as not matching. In
// ipvs mode that changes no outcome: the ACCEPT writes no translation, and
// the second rule accepts the same packets whenever the external IP is
// bound on the node, as ipvs mode binds each on kube-ipvs0 (an external IP
// bound nowhere is MissingVIPAddress, and IPVS sees none of its packets
// either way). physdevNotes says so beside the walk's note.

// physdevNotes explain each such pair of rules of the node.
func (p *Plane) physdevNotes() []string {
	if p.rules == nil {
		return nil
	}
	c := p.rules.Rules.Chain("nat", "KUBE-SERVICES")
	if c == nil {
		return nil
	}
	rules := c.Rules()
	var out []string
	for i, r := range rules {
		set := externalIPSet(r)
		if set == "" || i+1 >= len(rules) {
			continue
		}
		if _, ok := r.Match("physdev"); !ok || r.Target != "ACCEPT" {
			continue
		}
		next := rules[i+1]
		if externalIPSet(next) != set || next.Target != "ACCEPT" || !dstLocal(next) {
			continue
		}
		out = append(out, fmt.Sprintf("%s (-m physdev, %s) is not evaluated, but no outcome depends on it: it writes no translation, and line %d (--dst-type LOCAL -j ACCEPT) accepts the same packets to an external IP bound on kube-ipvs0; a path from outside shows line %d where the kernel stops at line %d", r.Ref(), set, next.Line, next.Line, r.Line))
	}
	return out
}

// externalIPSet is the KUBE-EXTERNAL-IP set a rule matches on dst,dst
// ("" for none).
func externalIPSet(r *iptables.Rule) string {
	m, ok := r.Match("set")
	if !ok {
		return ""
	}
	o, ok := m.Option("match-set")
	if !ok || o.Negate || len(o.Args) < 2 || o.Args[1] != "dst,dst" || !strings.Contains(o.Args[0], "EXTERNAL-IP") {
		return ""
	}
	return o.Args[0]
}

// dstLocal says whether a rule matches -m addrtype --dst-type LOCAL.
func dstLocal(r *iptables.Rule) bool {
	m, ok := r.Match("addrtype")
	if !ok {
		return false
	}
	o, ok := m.Option("dst-type")
	return ok && !o.Negate && len(o.Args) > 0 && o.Args[0] == "LOCAL"
}
