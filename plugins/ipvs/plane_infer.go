package ipvs

import (
	"strings"

	"github.com/svctrace/svctrace/plugins/iptables"
)

// clusterCIDR reads the cluster CIDR off the rule that masquerades
// connections to a ClusterIP from outside it: "! -s CIDR … --match-set
// KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ"; "" when there is none.
func (p *Plane) clusterCIDR() (string, int) {
	if r := p.clusterIPMasq(func(r *iptables.Rule) bool { return r.Source != nil && r.Source.Negate }); r != nil {
		return r.Source.Prefix.String(), r.Line
	}
	return "", 0
}

// localIface reads an interface local-traffic detector off the same rule:
// "! -i cni0 … --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ"; ""
// when there is none.
func (p *Plane) localIface() (string, int) {
	if r := p.clusterIPMasq(func(r *iptables.Rule) bool { return r.InIface != nil && r.InIface.Negate }); r != nil {
		return r.InIface.Name, r.Line
	}
	return "", 0
}

// clusterIPMasq is the first rule of nat KUBE-SERVICES that marks
// connections to a ClusterIP (the KUBE-CLUSTER-IP set) for masquerade and
// passes test; nil when there is none.
func (p *Plane) clusterIPMasq(test func(*iptables.Rule) bool) *iptables.Rule {
	c := p.rules.Rules.Chain("nat", "KUBE-SERVICES")
	if c == nil {
		return nil
	}
	for _, r := range c.Rules() {
		if r.Target != "KUBE-MARK-MASQ" || !test(r) {
			continue
		}
		if m, ok := r.Match("set"); ok {
			if o, ok := m.Option("match-set"); ok && len(o.Args) > 0 && strings.HasSuffix(o.Args[0], "CLUSTER-IP") {
				return r
			}
		}
	}
	return nil
}
