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
	case "payload", "meta", "ct", "fib", "numgen", "jhash", "symhash":
		return p.selectorExpr(kind, body, sub, fam)
	case "concat", "prefix", "range", "&", "|", "^", "<<", ">>":
		return p.compoundExpr(kind, body, sub, fam)
	case "set", "map", "elem":
		return p.setExpr(kind, v, body, path, sub, fam)
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
