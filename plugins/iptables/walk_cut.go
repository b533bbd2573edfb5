package iptables

import (
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// cutHere reports whether a packet that falls off chain c of an excerpt
// falls off where the excerpt was cut, not where kube-proxy lets it pass:
// kube-proxy ends a Service's chain (KUBE-SVC, KUBE-SVL) with a jump every
// packet takes, and never writes a rule for a Service port in nat's
// KUBE-SERVICES or KUBE-NODEPORTS (its masquerade rule) without the jump
// to the Service's chain after it. So the packet's share there is not
// known. A rule for the port that jumps to the Service's chain is there
// when the packet came back from that chain, and then it is no cut.
func (w *Walker) cutHere(s *state, table string, c *Chain) bool {
	if strings.HasPrefix(c.Name, PrefixSVC) || strings.HasPrefix(c.Name, PrefixSVL) {
		return true
	}
	if table != "nat" || (c.Name != "KUBE-SERVICES" && c.Name != "KUBE-NODEPORTS") {
		return false
	}
	named := false
	for _, r := range c.Rules() {
		proto, port, ok := protoPort(r)
		if !ok || port != int32(s.pkt.DstPort) || !strings.EqualFold(proto, s.pkt.Protocol) {
			continue
		}
		if c.Name != "KUBE-NODEPORTS" && (r.Dest == nil || r.Dest.Negate || !r.Dest.Prefix.Contains(s.pkt.Dst)) {
			continue
		}
		if serviceChain(r.Target) {
			// The jump is there (the packet came back from it: a Local
			// policy without local endpoints lets it pass here).
			return false
		}
		if _, ok := SPNFromComment(r.Comment()); ok {
			named = true
		}
	}
	return named
}

// masqAfter reports whether nat POSTROUTING masquerades the packet of s as
// it is: for a branch that ends at an endpoint's chain the excerpt lacks,
// whose packet goes on (to an address not shown) with the marks it got.
func (w *Walker) masqAfter(s *state) bool {
	hc := w.hooks[dataplane.HookPostrouting]
	if hc == nil {
		return false
	}
	t := s.fork()
	t.verdict, t.opts.NoHops = "", true
	var out []dataplane.Branch
	w.runTables(t, hc, 0, nil, &out)
	for _, b := range out {
		if b.Masquerade {
			return true
		}
	}
	return false
}
