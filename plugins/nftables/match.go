package nftables

import (
	"net/netip"
)

// test evaluates a match on one value of its left side. It returns the
// element matched, if the right side is a set.
func (k *walk) test(s *state, t *Table, c *Chain, r *Rule, m *Match, v value) (bool, *hit) {
	switch v.kind {
	case vNone:
		return false, nil
	case vUnknown:
		s.note("%s: %s; rule assumed not to match", ruleRef(t, c, r), v.why())
		return false, nil
	}
	var member bool
	var h *hit
	switch right := m.Right.(type) {
	case *SetRef, *AnonSet:
		h = k.lookupIn(s, t, right, v)
		member = h != nil
	default:
		switch m.Op {
		case "<", ">", "<=", ">=":
			return compare(m.Op, v, right), nil
		}
		if v.kind == vFlags {
			member = flagsMatch(v, right, m.Op)
		} else {
			member = matchAtom(v, right)
		}
	}
	if m.Op == "!=" {
		return !member, nil
	}
	return member, h
}

func compare(op string, v value, right Expr) bool {
	lit, ok := right.(*Literal)
	if !ok || v.kind != vInt {
		return false
	}
	n, ok := litInt(lit.Text)
	if !ok {
		return false
	}
	switch op {
	case "<":
		return v.n < n
	case ">":
		return v.n > n
	case "<=":
		return v.n <= n
	}
	return v.n >= n
}

// flagsMatch: "in" (and a bare flag) tests for any of the flags, "==" and
// "!=" for the exact set.
func flagsMatch(have value, right Expr, op string) bool {
	var want []string
	switch x := right.(type) {
	case *Literal:
		want = []string{x.Text}
	case *List:
		for _, it := range x.Items {
			want = append(want, it.String())
		}
	default:
		return false
	}
	if op == "in" {
		for _, w := range want {
			if have.flagSet(w) {
				return true
			}
		}
		return false
	}
	if len(want) != have.flagCount() {
		return false
	}
	for _, w := range want {
		if !have.flagSet(w) {
			return false
		}
	}
	return true
}

// lookup finds v in a verdict map, noting a value it could not compute.
func (k *walk) lookup(s *state, t *Table, c *Chain, r *Rule, data Expr, v value) *hit {
	switch v.kind {
	case vNone:
		return nil
	case vUnknown:
		s.note("%s: %s; rule assumed not to match", ruleRef(t, c, r), v.why())
		return nil
	}
	return k.lookupIn(s, t, data, v)
}

// lookupIn finds v in a named or anonymous set or map.
func (k *walk) lookupIn(s *state, t *Table, data Expr, v value) *hit {
	switch d := data.(type) {
	case *SetRef:
		set := t.Set(d.Name)
		if set == nil {
			s.note("set @%s is not in table %s: lookup taken as failed", d.Name, t.ID())
			return nil
		}
		if k.w.dynamic[setRef{t, d.Name}] {
			// Written from the packet path (affinity): its elements are
			// clients seen before, which Env.Sticky names.
			if k.w.env.Sticky[d.Name] {
				return &hit{set: d.Name, text: v.String()}
			}
			return nil
		}
		if el := set.find(v); el != nil {
			return &hit{set: d.Name, el: el}
		}
	case *AnonSet:
		for _, el := range d.Elems {
			if matchAtom(v, el.Key) {
				return &hit{el: el}
			}
		}
	}
	return nil
}

// recordSources notes the ranges a match tests the source address
// against.
func (k *walk) recordSources(s *state, t *Table, m *Match) {
	p, ok := m.Left.(*Payload)
	if !ok || p.Field != "saddr" || (p.Protocol != "ip" && p.Protocol != "ip6") || s.pkt.Src.Is4() != (p.Protocol == "ip") {
		return
	}
	var keys []Expr
	switch x := m.Right.(type) {
	case *SetRef:
		set := t.Set(x.Name)
		if set == nil || k.w.dynamic[setRef{t, x.Name}] {
			return
		}
		for _, el := range set.Elements {
			keys = append(keys, el.Key)
		}
	case *AnonSet:
		for _, el := range x.Elems {
			keys = append(keys, el.Key)
		}
	default:
		keys = []Expr{x}
	}
	for _, e := range keys {
		if pf, ok := prefixOf(e); ok {
			s.addSource(pf)
		}
	}
}

func prefixOf(e Expr) (netip.Prefix, bool) {
	switch x := e.(type) {
	case *Prefix:
		a, ok := litAddr(x.Addr)
		if !ok {
			return netip.Prefix{}, false
		}
		p, err := a.Prefix(x.Len)
		return p, err == nil
	case *Literal:
		a, ok := litAddr(x)
		if !ok {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
