package nftables

import (
	"net/netip"
	"strconv"
	"strings"
)

// vkind is the kind of a value computed from a packet.
type vkind uint8

const (
	vUnknown vkind = iota // could not be evaluated (why says so)
	vAddr
	vInt
	vStr
	vFlags // ct state / ct status: a set of names
	vConcat
	vNone // a lookup found nothing, or the field is absent: no match, no note
)

// value is what an expression yields for one packet. It is kept small: a
// node's ruleset holds one per literal and per map element's data.
type value struct {
	kind vkind
	addr netip.Addr
	n    uint64
	// s is a vStr's string, a vFlags' names (comma-separated), a
	// vUnknown's reason.
	s     string
	parts []value
}

func unknownValue(why string) value { return value{kind: vUnknown, s: why} }

// why is the reason a vUnknown value could not be evaluated.
func (v value) why() string { return v.s }

// flagSet reports whether f is one of a vFlags value's names.
func (v value) flagSet(f string) bool {
	for rest := v.s; rest != ""; {
		name, after, _ := strings.Cut(rest, ",")
		if name == f {
			return true
		}
		rest = after
	}
	return false
}

// flagCount is how many names a vFlags value holds.
func (v value) flagCount() int {
	if v.s == "" {
		return 0
	}
	return strings.Count(v.s, ",") + 1
}

func none() value { return value{kind: vNone} }

func (v value) String() string {
	switch v.kind {
	case vAddr:
		return v.addr.String()
	case vInt:
		return strconv.FormatUint(v.n, 10)
	case vStr:
		return v.s
	case vFlags:
		return v.s
	case vConcat:
		parts := make([]string, len(v.parts))
		for i, p := range v.parts {
			parts[i] = p.String()
		}
		return strings.Join(parts, " . ")
	}
	return "?"
}

// appendKey appends the value's canonical form for a set index to buf;
// false for a value no index holds.
func (v value) appendKey(buf []byte) ([]byte, bool) {
	switch v.kind {
	case vAddr:
		return v.addr.AppendTo(append(buf, 'a')), true
	case vInt:
		return strconv.AppendUint(append(buf, 'n'), v.n, 10), true
	case vStr:
		return append(append(buf, 's'), v.s...), true
	case vConcat:
		for i, p := range v.parts {
			if i > 0 {
				buf = append(buf, 0)
			}
			var ok bool
			if buf, ok = p.appendKey(buf); !ok {
				return buf, false
			}
		}
		return buf, true
	}
	return buf, false
}

// buildIndex files elements with exact keys under their canonical form,
// read with the set's key type; the rest are matched one by one.
func (s *Set) buildIndex() {
	s.index = make(map[string]*Element, len(s.Elements))
	s.ranged = nil
	var buf []byte
	for _, el := range s.Elements {
		var ok bool
		if buf, ok = elemKey(buf[:0], el.Key, s.KeyType); ok {
			if _, dup := s.index[string(buf)]; !dup {
				s.index[string(buf)] = el
			}
			continue
		}
		s.ranged = append(s.ranged, el)
	}
}

// find returns the element v matches, nil if none.
func (s *Set) find(v value) *Element {
	// The key is made on the stack, and the lookup by string(bytes)
	// copies nothing.
	var arr [64]byte
	if k, ok := v.appendKey(arr[:0]); ok {
		if el := s.index[string(k)]; el != nil {
			return el
		}
	}
	for _, el := range s.ranged {
		if matchAtom(v, el.Key) {
			return el
		}
	}
	return nil
}

// elemKey is the key value.key gives the values an element with exact
// key parts matches, made in buf (reused between calls).
func elemKey(buf []byte, e Expr, types []string) ([]byte, bool) {
	if c, ok := e.(*Concat); ok {
		if len(c.Parts) != len(types) {
			return buf, false
		}
		for i, p := range c.Parts {
			if i > 0 {
				buf = append(buf, 0)
			}
			var ok bool
			if buf, ok = appendAtomKey(buf, p, types[i]); !ok {
				return buf, false
			}
		}
		return buf, true
	}
	if len(types) != 1 {
		return buf, false
	}
	return appendAtomKey(buf, e, types[0])
}

func appendAtomKey(buf []byte, e Expr, typ string) ([]byte, bool) {
	if p, ok := e.(*Prefix); ok {
		a, ok := litAddr(p.Addr)
		if !ok || p.Len != a.BitLen() {
			return buf, false
		}
		return a.AppendTo(append(buf, 'a')), true
	}
	lit, ok := e.(*Literal)
	if !ok {
		return buf, false
	}
	switch typ {
	case "ipv4_addr", "ipv6_addr":
		if a, ok := litAddr(lit); ok {
			return a.AppendTo(append(buf, 'a')), true
		}
	case "inet_proto", "inet_service", "mark", "integer", "nf_proto", "ct_state", "ct_status":
		if n, ok := litInt(lit.Text); ok {
			return strconv.AppendUint(append(buf, 'n'), n, 10), true
		}
	case "ifname":
		if !strings.HasSuffix(lit.Text, "*") {
			return append(append(buf, 's'), lit.Text...), true
		}
	}
	return buf, false
}

// matchAtom reports whether v is matched by a literal, prefix, range or
// concatenation of them. The literal is read according to v's kind.
func matchAtom(v value, pat Expr) bool {
	switch p := pat.(type) {
	case *Literal:
		switch v.kind {
		case vAddr:
			a, ok := litAddr(p)
			return ok && a == v.addr
		case vInt:
			n, ok := litInt(p.Text)
			return ok && n == v.n
		case vStr:
			return ifnameMatch(v.s, p.Text)
		case vFlags:
			return v.flagSet(p.Text)
		}
	case *Prefix:
		a, ok := litAddr(p.Addr)
		if !ok || v.kind != vAddr || a.Is4() != v.addr.Is4() {
			return false
		}
		pf, err := a.Prefix(p.Len)
		return err == nil && pf.Contains(v.addr)
	case *Range:
		switch v.kind {
		case vAddr:
			lo, ok1 := litAddr(p.Lo)
			hi, ok2 := litAddr(p.Hi)
			return ok1 && ok2 && lo.Is4() == v.addr.Is4() && lo.Compare(v.addr) <= 0 && v.addr.Compare(hi) <= 0
		case vInt:
			lo, ok1 := p.Lo.(*Literal)
			hi, ok2 := p.Hi.(*Literal)
			if !ok1 || !ok2 {
				return false
			}
			l, ok1 := litInt(lo.Text)
			h, ok2 := litInt(hi.Text)
			return ok1 && ok2 && l <= v.n && v.n <= h
		}
	case *Concat:
		if v.kind != vConcat || len(v.parts) != len(p.Parts) {
			return false
		}
		for i, part := range p.Parts {
			if !matchAtom(v.parts[i], part) {
				return false
			}
		}
		return true
	case *List:
		for _, it := range p.Items {
			if matchAtom(v, it) {
				return true
			}
		}
	}
	return false
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}
