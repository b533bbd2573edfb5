package nftables

import (
	"fmt"
	"strings"
)

// stmt reads one statement of a rule's expr array.
func (p *parser) stmt(v any, path, fam string) (Stmt, error) {
	kind, body, err := single(v, path)
	if err != nil {
		return nil, err
	}
	sub := path + "." + kind
	switch kind {
	case "match":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		op, err := optStr(m, "op", sub)
		if err != nil {
			return nil, err
		}
		if op == "" {
			op = "=="
		}
		switch op {
		case "==", "!=", "in", "<", ">", "<=", ">=":
		default:
			return nil, fmt.Errorf("%s.op: unknown operator %q", sub, op)
		}
		l, r, err := p.pair(m, "left", "right", sub, fam)
		if err != nil {
			return nil, err
		}
		return &Match{Op: op, Left: l, Right: r}, nil
	case "vmap":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		e, err := p.lookup(m, sub, fam, func(k, d Expr) Expr { return &VMap{Key: k, Data: d} })
		if err != nil {
			return nil, err
		}
		return e.(*VMap), nil
	case "mangle":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		k, val, err := p.pair(m, "key", "value", sub, fam)
		if err != nil {
			return nil, err
		}
		return &Mangle{Key: k, Value: val}, nil
	case "dnat", "snat", "masquerade", "redirect":
		return p.nat(kind, body, sub, fam)
	case "reject":
		r := &Reject{}
		if m, ok := body.(map[string]any); ok {
			if r.Type, err = optStr(m, "type", sub); err != nil {
				return nil, err
			}
			if c, ok := m["expr"]; ok {
				r.Code = fmt.Sprint(c)
			}
		}
		return r, nil
	case "set", "map":
		return p.setStmt(kind, body, sub, fam)
	case "counter":
		c := &CounterStmt{}
		if s, ok := body.(string); ok {
			c.Name = s
		}
		return c, nil
	case "log":
		l := &Log{}
		if m, ok := body.(map[string]any); ok {
			l.Prefix, _ = m["prefix"].(string)
		}
		return l, nil
	case "notrack":
		return &Notrack{}, nil
	case "limit":
		return &Limit{Text: compact(body)}, nil
	case "xt":
		m, err := asObject(body, sub)
		if err != nil {
			return nil, err
		}
		x := &XT{}
		x.Type, _ = m["type"].(string)
		x.Name, _ = m["name"].(string)
		return x, nil
	case "accept", "drop", "continue", "return", "jump", "goto":
		return p.verdict(kind, body, sub)
	}
	return p.unknown(kind, v, path, fam, "statement"), nil
}

func (p *parser) pair(m map[string]any, a, b, path, fam string) (Expr, Expr, error) {
	av, ok := m[a]
	if !ok {
		return nil, nil, fmt.Errorf("%s: missing %q", path, a)
	}
	bv, ok := m[b]
	if !ok {
		return nil, nil, fmt.Errorf("%s: missing %q", path, b)
	}
	x, err := p.expr(av, path+"."+a, fam)
	if err != nil {
		return nil, nil, err
	}
	y, err := p.expr(bv, path+"."+b, fam)
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

func (p *parser) nat(kind string, body any, path, fam string) (Stmt, error) {
	n := &NAT{Kind: kind}
	if body == nil {
		if kind == "dnat" || kind == "snat" {
			return nil, fmt.Errorf("%s: %s without an address", path, kind)
		}
		return n, nil
	}
	m, err := asObject(body, path)
	if err != nil {
		return nil, err
	}
	if n.Family, err = optStr(m, "family", path); err != nil {
		return nil, err
	}
	if a, ok := m["addr"]; ok {
		if n.Addr, err = p.expr(a, path+".addr", fam); err != nil {
			return nil, err
		}
	} else if kind == "dnat" || kind == "snat" {
		return nil, fmt.Errorf("%s: missing \"addr\"", path)
	}
	if v, ok := m["port"]; ok {
		if n.Port, err = p.expr(v, path+".port", fam); err != nil {
			return nil, err
		}
	}
	if n.Flags, err = strList(m["flags"], path+".flags"); err != nil {
		return nil, err
	}
	return n, nil
}

func (p *parser) setStmt(kind string, body any, path, fam string) (Stmt, error) {
	m, err := asObject(body, path)
	if err != nil {
		return nil, err
	}
	s := &SetStmt{}
	if s.Op, err = reqStr(m, "op", path); err != nil {
		return nil, err
	}
	name, err := reqStr(m, kind, path)
	if err != nil {
		return nil, err
	}
	s.Set = strings.TrimPrefix(name, "@")
	ev, ok := m["elem"]
	if !ok {
		return nil, fmt.Errorf("%s: missing \"elem\"", path)
	}
	epath := path + ".elem"
	if w, ok := ev.(map[string]any); ok && len(w) == 1 && w["elem"] != nil {
		// {"elem": {"val": ..., "timeout": N}}: the timeout of the
		// element the statement writes.
		el, err := p.element(ev, epath, false, fam)
		if err != nil {
			return nil, err
		}
		s.Elem, s.Timeout = el.Key, el.Timeout
	} else if s.Elem, err = p.expr(ev, epath, fam); err != nil {
		return nil, err
	}
	if d, ok := m["data"]; ok {
		if s.Data, err = p.expr(d, path+".data", fam); err != nil {
			return nil, err
		}
	}
	return s, nil
}
