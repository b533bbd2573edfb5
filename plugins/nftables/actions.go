package nftables

import (
	"net/netip"

	"github.com/svctrace/svctrace/dataplane"
)

// Statements that change the packet or the connection: marks, NAT,
// affinity records.

func (k *walk) mangle(s *state, t *Table, c *Chain, r *Rule, m *Mangle, v value) {
	if mk, ok := m.Key.(*Meta); !ok || mk.Key != "mark" {
		s.note("%s: %s is not followed by the walk", ruleRef(t, c, r), m)
		return
	}
	if v.kind != vInt {
		s.note("%s: mark value %s not evaluated; mark left unchanged", ruleRef(t, c, r), m.Value)
		return
	}
	s.mark = uint32(v.n)
}

// nat performs dnat, snat, masquerade or redirect: each ends the chain
// (accept) once it has set up the binding.
func (k *walk) nat(s *state, t *Table, c *Chain, r *Rule, n *NAT, rc rctx) []ruleOut {
	switch n.Kind {
	case "masquerade", "snat":
		s.masq, s.snatted = true, true
		if n.Kind == "snat" {
			s.note("%s: snat counted as masquerade", ruleRef(t, c, r))
		}
		k.hop(s, t, c, r, rc)
		return s.one(ruleOut{st: s, kind: outAccept})
	case "redirect":
		if n.Port != nil {
			if a := k.eval(s, t, n.Port); len(a) > 0 {
				s.redirect = a[0].v.String()
			}
		}
		s.verdict = dataplane.Redirect
		k.hop(s, t, c, r, rc)
		return s.one(ruleOut{st: s, kind: outVerdict})
	}
	to := n.Addr
	if n.Port != nil {
		to = &Concat{Parts: []Expr{n.Addr, n.Port}}
	}
	alts := k.eval(s, t, to)
	if s.opts.Toward.IsValid() {
		// Only the alternative to the backend asked about is followed:
		// the others would be dropped at their translation anyway.
		alts = towardOnly(alts, s)
		if len(alts) == 0 {
			return nil
		}
		if len(alts) == 1 && alts[0].p < 1 {
			s.prob *= alts[0].p
			rc.prob *= alts[0].p
			alts[0].p = 1
		}
	}
	return k.fork(s, alts, rc, func(s *state, a alt, rc rctx) []ruleOut {
		addr, port, ok := natTarget(a.v, s.pkt.DstPort)
		if !ok {
			if a.v.kind == vUnknown {
				s.note("%s: dnat target not evaluated (%s); rule assumed not to match", ruleRef(t, c, r), a.v.why())
			}
			return s.one(ruleOut{st: s, kind: outNoMatch})
		}
		if !s.opts.Keeps(netip.AddrPortFrom(addr, port)) {
			return nil // another backend than the one asked about
		}
		s.pkt.Dst, s.pkt.DstPort = addr, port
		s.dnat = netip.AddrPortFrom(addr, port).String()
		s.dnatted = true
		k.hop(s, t, c, r, rc)
		return s.one(ruleOut{st: s, kind: outAccept})
	})
}

// towardOnly keeps the alternatives of a DNAT target that translate to the
// walk's Toward, and those that are no address (noted when followed).
func towardOnly(alts []alt, s *state) []alt {
	var out []alt
	for _, a := range alts {
		if addr, port, ok := natTarget(a.v, s.pkt.DstPort); ok && !s.opts.Keeps(netip.AddrPortFrom(addr, port)) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// natTarget reads a DNAT target: an address, or "address . port".
func natTarget(v value, port uint16) (netip.Addr, uint16, bool) {
	switch v.kind {
	case vAddr:
		return v.addr, port, true
	case vConcat:
		if len(v.parts) == 2 && v.parts[0].kind == vAddr && v.parts[1].kind == vInt && v.parts[1].n <= 65535 {
			return v.parts[0].addr, uint16(v.parts[1].n), true
		}
	}
	return netip.Addr{}, 0, false
}

// setStmt records what an add/update writes: an element keyed by the
// source address is a ClientIP affinity record.
func (k *walk) setStmt(s *state, t *Table, st *SetStmt) {
	if st.Op == "delete" || !hasSaddr(st.Elem) {
		return
	}
	s.affKey = st.Set
	secs := st.Timeout
	if secs == 0 {
		if set := t.Set(st.Set); set != nil {
			secs = set.Timeout
		}
	}
	s.affSecs = int32(min(secs, 1<<31-1))
}

func hasSaddr(e Expr) bool {
	switch x := e.(type) {
	case *Payload:
		return x.Field == "saddr"
	case *Concat:
		for _, p := range x.Parts {
			if hasSaddr(p) {
				return true
			}
		}
	}
	return false
}
