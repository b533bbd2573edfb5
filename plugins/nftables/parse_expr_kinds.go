package nftables

import (
	"fmt"
	"strings"
)

// selectorExpr reads an expression that selects a value of the packet or
// its state: payload, meta, ct, fib, numgen, jhash and symhash. sub is
// the path of the expression's body.
func (p *parser) selectorExpr(kind string, body any, sub, fam string) (Expr, error) {
	m, err := asObject(body, sub)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "payload":
		return payloadExpr(m, sub)
	case "meta":
		key, err := reqStr(m, "key", sub)
		return &Meta{Key: key}, err
	case "ct":
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
		f := &Fib{}
		if f.Result, err = reqStr(m, "result", sub); err != nil {
			return nil, err
		}
		f.Flags, err = strList(m["flags"], sub+".flags")
		return f, err
	case "numgen":
		n := &Numgen{}
		if n.Mode, err = optStr(m, "mode", sub); err != nil {
			return nil, err
		}
		if n.Mod, n.Offset, err = modOffset(m, sub); err != nil {
			return nil, err
		}
		return n, nil
	}
	// jhash, symhash
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
}

// payloadExpr reads the body of a payload expression.
func payloadExpr(m map[string]any, sub string) (Expr, error) {
	var err error
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
}

// compoundExpr reads an expression built of others: concat, prefix,
// range and the binary operators.
func (p *parser) compoundExpr(kind string, body any, sub, fam string) (Expr, error) {
	switch kind {
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
	}
	// "&", "|", "^", "<<", ">>"
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
}

// setExpr reads a set, map or elem expression: v is the expression, body
// its body, path and sub their paths.
func (p *parser) setExpr(kind string, v, body any, path, sub, fam string) (Expr, error) {
	switch kind {
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
	}
	// elem
	el, err := p.element(v, path, false, fam)
	if err != nil {
		return nil, err
	}
	return el.Key, nil
}
