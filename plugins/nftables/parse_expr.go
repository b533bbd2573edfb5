package nftables

import (
	"encoding/json"
	"fmt"
	"strings"
)

// expr reads an expression. fam is the table's family (for notes).
func (p *parser) expr(v any, path, fam string) (Expr, error) {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "@") {
			return &SetRef{Name: x[1:]}, nil
		}
		return newLiteral(x, false), nil
	case json.Number:
		return newLiteral(x.String(), true), nil
	case bool:
		return newLiteral(fmt.Sprint(x), false), nil
	case []any:
		l := &List{}
		for i, e := range x {
			it, err := p.expr(e, fmt.Sprintf("%s[%d]", path, i), fam)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, it)
		}
		return l, nil
	case nil:
		return nil, fmt.Errorf("%s: want an expression, got null", path)
	}
	kind, body, err := single(v, path)
	if err != nil {
		return nil, err
	}
	sub := path + "." + kind
	switch kind {
	case "payload":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		pl := &Payload{}
		if pl.Protocol, err = optStr(m, "protocol", sub); err != nil {
			return nil, err
		}
		if pl.Field, err = optStr(m, "field", sub); err != nil {
			return nil, err
		}
		if pl.Base, err = optStr(m, "base", sub); err != nil {
			return nil, err
		}
		off, err := optInt(m, "offset", sub)
		if err != nil {
			return nil, err
		}
		ln, err := optInt(m, "len", sub)
		if err != nil {
			return nil, err
		}
		pl.Offset, pl.Len = int(off), int(ln)
		return pl, nil
	case "meta":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		key, err := reqStr(m, "key", sub)
		return &Meta{Key: key}, err
	case "ct":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		ct := &CT{}
		if ct.Key, err = reqStr(m, "key", sub); err != nil {
			return nil, err
		}
		if ct.Dir, err = optStr(m, "dir", sub); err != nil {
			return nil, err
		}
		ct.Family, err = optStr(m, "family", sub)
		return ct, err
	case "fib":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		f := &Fib{}
		if f.Result, err = reqStr(m, "result", sub); err != nil {
			return nil, err
		}
		f.Flags, err = strList(m["flags"], sub+".flags")
		return f, err
	case "numgen":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		n := &Numgen{}
		if n.Mode, err = optStr(m, "mode", sub); err != nil {
			return nil, err
		}
		if n.Mod, n.Offset, err = modOffset(m, sub); err != nil {
			return nil, err
		}
		return n, nil
	case "jhash", "symhash":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		h := &Hash{Kind: kind}
		if h.Mod, h.Offset, err = modOffset(m, sub); err != nil {
			return nil, err
		}
		if e, ok := m["expr"]; ok {
			if h.Expr, err = p.expr(e, sub+".expr", fam); err != nil {
				return nil, err
			}
		}
		return h, nil
	case "concat":
		list, ok := body.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an array, got %s", sub, jsonType(body))
		}
		c := &Concat{}
		for i, e := range list {
			pp := "" // a scalar needs no path: it reads without error or note
			if !scalar(e) {
				pp = fmt.Sprintf("%s[%d]", sub, i)
			}
			part, err := p.expr(e, pp, fam)
			if err != nil {
				return nil, err
			}
			c.Parts = append(c.Parts, part)
		}
		return c, nil
	case "prefix":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		a, ok := m["addr"]
		if !ok {
			return nil, fmt.Errorf("%s: missing \"addr\"", sub)
		}
		addr, err := p.expr(a, sub+".addr", fam)
		if err != nil {
			return nil, err
		}
		ln, err := optInt(m, "len", sub)
		if err != nil {
			return nil, err
		}
		return &Prefix{Addr: addr, Len: int(ln)}, nil
	case "range":
		list, ok := body.([]any)
		if !ok || len(list) != 2 {
			return nil, fmt.Errorf("%s: want an array of two bounds", sub)
		}
		lo, err := p.expr(list[0], sub+"[0]", fam)
		if err != nil {
			return nil, err
		}
		hi, err := p.expr(list[1], sub+"[1]", fam)
		if err != nil {
			return nil, err
		}
		return &Range{Lo: lo, Hi: hi}, nil
	case "set":
		if s, ok := body.(string); ok && strings.HasPrefix(s, "@") {
			return &SetRef{Name: s[1:]}, nil
		}
		list, ok := body.([]any)
		if !ok {
			// A single element: {"set": "10.0.0.1"}.
			list = []any{body}
		}
		as := &AnonSet{}
		for i, e := range list {
			el, err := p.element(e, fmt.Sprintf("%s[%d]", sub, i), false, fam)
			if err != nil {
				return nil, err
			}
			as.Elems = append(as.Elems, el)
		}
		return as, nil
	case "map":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		return p.lookup(m, sub, fam, func(k, d Expr) Expr { return &MapLookup{Key: k, Data: d} })
	case "&", "|", "^", "<<", ">>":
		list, ok := body.([]any)
		if !ok || len(list) != 2 {
			return nil, fmt.Errorf("%s: want an array of two operands", sub)
		}
		l, err := p.expr(list[0], sub+"[0]", fam)
		if err != nil {
			return nil, err
		}
		r, err := p.expr(list[1], sub+"[1]", fam)
		if err != nil {
			return nil, err
		}
		return &Binop{Op: kind, Left: l, Right: r}, nil
	case "elem":
		el, err := p.element(v, path, false, fam)
		if err != nil {
			return nil, err
		}
		return el.Key, nil
	case "accept", "drop", "continue", "return", "jump", "goto":
		return p.verdict(kind, body, sub)
	}
	return p.unknown(kind, v, path, fam, "expression"), nil
}

func (p *parser) lookup(m map[string]any, path, fam string, mk func(k, d Expr) Expr) (Expr, error) {
	kv, ok := m["key"]
	if !ok {
		return nil, fmt.Errorf("%s: missing \"key\"", path)
	}
	k, err := p.expr(kv, path+".key", fam)
	if err != nil {
		return nil, err
	}
	dv, ok := m["data"]
	if !ok {
		return nil, fmt.Errorf("%s: missing \"data\"", path)
	}
	d, err := p.expr(dv, path+".data", fam)
	if err != nil {
		return nil, err
	}
	if l, ok := d.(*List); ok {
		// Some nft versions write an anonymous map's data as a bare
		// array of [key, value] pairs.
		as := &AnonSet{}
		for i, it := range l.Items {
			pair, ok := it.(*List)
			if !ok || len(pair.Items) != 2 {
				return nil, fmt.Errorf("%s.data[%d]: want a [key, value] pair", path, i)
			}
			el := &Element{Key: pair.Items[0]}
			el.setData(pair.Items[1])
			as.Elems = append(as.Elems, el)
		}
		d = as
	}
	switch d.(type) {
	case *SetRef, *AnonSet:
	default:
		return nil, fmt.Errorf("%s.data: want a map (@name or a set), got %s", path, d)
	}
	return mk(k, d), nil
}

func (p *parser) verdict(kind string, body any, path string) (*Verdict, error) {
	v := &Verdict{Kind: kind}
	if kind == "jump" || kind == "goto" {
		m, err := asObject(body, path)
		if err != nil {
			return nil, err
		}
		if v.Target, err = reqStr(m, "target", path); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (p *parser) unknown(kind string, v any, path, fam, what string) *Unknown {
	u := &Unknown{Name: kind, Raw: compact(v), Path: path}
	p.note(fam, "%s: unknown %s %q kept (%s); a walk treats it as not matching", path, what, kind, u.Raw)
	return u
}

// modOffset reads the modulus and offset of numgen and hash expressions.
func modOffset(m map[string]any, path string) (int, int, error) {
	mod, err := optInt(m, "mod", path)
	if err != nil {
		return 0, 0, err
	}
	off, err := optInt(m, "offset", path)
	if err != nil {
		return 0, 0, err
	}
	if mod <= 0 || mod > 1<<16 {
		return 0, 0, fmt.Errorf("%s.mod: want 1..65536, got %d", path, mod)
	}
	return int(mod), int(off), nil
}
