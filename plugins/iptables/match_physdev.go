package iptables

import "github.com/svctrace/svctrace/dataplane"

// physdev evaluates -m physdev, which asks whether the packet crossed a
// bridge port (kube-proxy's external IP rules before 1.24, and ipvs mode's,
// let in what "! --physdev-is-in": did not come in through one). A packet
// the node sends crossed none, nor did one from outside, which arrives on
// the node's own interface; a pod's did only with a bridge CNI and
// br_netfilter, which a node's rules do not tell: it is taken as not,
// with a note.
func physdev(s *state, r *Rule, m *Match) matchResult {
	for _, o := range m.Options {
		switch o.Name {
		case "physdev-is-in", "physdev-is-bridged", "physdev-is-out", "physdev-in", "physdev-out":
		default:
			s.note("%s: physdev option --%s not evaluated; assumed to match", r.Ref(), o.Name)
			continue
		}
		if s.pkt.Entry != dataplane.Output {
			s.note("%s: -m physdev: the packet is taken as not crossing a bridge port (true from outside and with a routed CNI; "+
				"with a bridge CNI and br_netfilter a pod's packet crosses one)", r.Ref())
		}
		// Crossing no bridge port, every physdev test is false.
		if !o.Negate {
			return noMatch
		}
	}
	return hasMatch
}
