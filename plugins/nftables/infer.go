package nftables

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// Infer reads kube-proxy's settings off its table: the local-traffic
// detector's CIDR from the rule that marks traffic from outside it for
// masquerade ("ip saddr != 10.244.0.0/16 jump mark-for-masquerade", or the
// inline mark of newer versions) or from the "short-circuit pod traffic"
// rule, and the masquerade bit from the mark it sets.
func (p *Plane) Infer() dataplane.Inferred {
	var in dataplane.Inferred
	t := p.kp
	if t == nil {
		return in
	}
	in.Mode = "nftables"
	in.Evidence = append(in.Evidence, fmt.Sprintf("mode nftables: table %s exists", t.ID()))
	if addrs, anyAddr, found := nodePortAddrs(t, "service-nodeports"); found && !anyAddr {
		in.NodePortIPs, in.NodePortIPsKnown = addrs, true
		in.Evidence = append(in.Evidence, fmt.Sprintf("NodePort addresses %v: set nodeport-ips", addrs))
	}
	seen := map[string]bool{}
	for _, c := range t.chainsMaybe(markSaddr | markIifname | markMangle) {
		for _, r := range c.rules() {
			marks, _ := p.marks(t, r, 0)
			if bit := markBit(r); bit >= 0 && in.MasqueradeBit == 0 {
				in.MasqueradeBit = int32(bit)
				in.Evidence = append(in.Evidence, fmt.Sprintf("masquerade bit %d: %s (%s)", bit, ruleRef(t, c, r), r.Text()))
			}
			for _, st := range r.Stmts {
				m, ok := st.(*Match)
				if !ok {
					continue
				}
				if mk, ok := m.Left.(*Meta); ok && mk.Key == "iifname" && m.Op == "!=" && marks {
					if in.LocalBridge == "" && in.LocalIfacePrefix == "" {
						in.LocalIface(strings.Trim(m.Right.String(), `"`), "*")
						in.Evidence = append(in.Evidence, fmt.Sprintf("local traffic detected by input interface %s, not by a CIDR: %s", m.Right, ruleRef(t, c, r)))
					}
					continue
				}
				pl, ok := m.Left.(*Payload)
				if !ok || pl.Field != "saddr" {
					continue
				}
				pf, ok := prefixOf(m.Right)
				if !ok || pf.IsSingleIP() {
					continue
				}
				detector := m.Op == "!=" && marks || m.Op == "==" && r.Comment == "short-circuit pod traffic"
				if !detector || seen[pf.String()] {
					continue
				}
				seen[pf.String()] = true
				in.ClusterCIDRs = append(in.ClusterCIDRs, pf.String())
				in.Evidence = append(in.Evidence, fmt.Sprintf("cluster CIDR %s: %s (%s)", pf, ruleRef(t, c, r), r.Text()))
			}
		}
	}
	if in.MasqueradeBit == 0 {
		maskBit(t, &in)
	}
	return in
}

// maskBit reads the masquerade bit off the masquerading rule ("meta mark &
// 0x00004000 != 0 ... masquerade"), when no rule sets it (an IPv6 table
// without a cluster CIDR has none).
func maskBit(t *Table, in *dataplane.Inferred) {
	for _, c := range t.chainsMaybe(markMasquerade) {
		masq := false
		for _, r := range c.rules() {
			for _, st := range r.Stmts {
				if n, ok := st.(*NAT); ok && n.Kind == "masquerade" {
					masq = true
				}
			}
		}
		if !masq {
			continue
		}
		for _, r := range c.rules() {
			for _, st := range r.Stmts {
				m, ok := st.(*Match)
				if !ok {
					continue
				}
				b, ok := m.Left.(*Binop)
				if !ok || b.Op != "&" || !isMarkExpr(b.Left) {
					continue
				}
				lit, ok := b.Right.(*Literal)
				if !ok {
					continue
				}
				if v, ok := litInt(lit.Text); ok && v != 0 && v&(v-1) == 0 && v <= 1<<31 {
					in.MasqueradeBit = int32(bits.TrailingZeros64(v))
					in.Evidence = append(in.Evidence, fmt.Sprintf("masquerade bit %d: %s (%s)", in.MasqueradeBit, ruleRef(t, c, r), r.Text()))
					return
				}
			}
		}
	}
}

// markBit is the bit a rule ors into the packet mark ("meta mark set meta
// mark | 0x00004000"), -1 if it sets no single bit.
func markBit(r *Rule) int {
	for _, st := range r.Stmts {
		x, ok := st.(*Mangle)
		if !ok {
			continue
		}
		mk, ok := x.Key.(*Meta)
		b, ok2 := x.Value.(*Binop)
		if !ok || mk.Key != "mark" || !ok2 || b.Op != "|" {
			continue
		}
		if lit, ok := b.Right.(*Literal); ok {
			if v, ok := litInt(lit.Text); ok && v != 0 && v&(v-1) == 0 && v <= 1<<31 {
				return bits.TrailingZeros64(v)
			}
		}
	}
	return -1
}

// marks reports whether a rule ors a bit into the packet mark, itself or
// in the chain it jumps to.
func (p *Plane) marks(t *Table, r *Rule, depth int) (bool, int) {
	if b := markBit(r); b >= 0 {
		return true, b
	}
	for _, st := range r.Stmts {
		switch x := st.(type) {
		case *Verdict:
			if x.Target == "" || depth > 2 {
				continue
			}
			if c := t.Chain(x.Target); c != nil {
				for _, cr := range c.rules() {
					if ok, bit := p.marks(t, cr, depth+1); ok {
						return true, bit
					}
				}
			}
		}
	}
	return false, -1
}
