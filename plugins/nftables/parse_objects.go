package nftables

import (
	"fmt"
	"strconv"
	"strings"
)

func asObject(body any, path string) (map[string]any, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want an object, got %s", path, jsonType(body))
	}
	return m, nil
}

func (p *parser) table(body any, path string) error {
	m, err := asObject(body, path)
	if err != nil {
		return err
	}
	fam, err := reqStr(m, "family", path)
	if err != nil {
		return err
	}
	name, err := reqStr(m, "name", path)
	if err != nil {
		return err
	}
	t := p.tableFor(fam, name)
	h, err := optInt(m, "handle", path)
	if err != nil {
		return err
	}
	t.Handle = int(h)
	t.Comment, err = optStr(m, "comment", path)
	return err
}

// named reads what every named object (chain, set, map) starts with: the
// object, the table it belongs to, and its name.
func (p *parser) named(body any, path string) (map[string]any, *Table, string, error) {
	m, err := asObject(body, path)
	if err != nil {
		return nil, nil, "", err
	}
	t, err := p.owner(m, path)
	if err != nil {
		return nil, nil, "", err
	}
	name, err := reqStr(m, "name", path)
	if err != nil {
		return nil, nil, "", err
	}
	return m, t, name, nil
}

func (p *parser) chain(body any, path string) error {
	m, t, name, err := p.named(body, path)
	if err != nil {
		return err
	}
	c, _ := t.chainNamed(name)
	h, err := optInt(m, "handle", path)
	if err != nil {
		return err
	}
	c.Handle = int(h)
	for _, f := range []struct {
		key string
		dst *string
	}{{"type", &c.Type}, {"hook", &c.Hook}, {"policy", &c.Policy}, {"comment", &c.Comment}} {
		if *f.dst, err = optStr(m, f.key, path); err != nil {
			return err
		}
	}
	if v, ok := m["prio"]; ok && v != nil {
		prio, err := priority(v, path+".prio")
		if err != nil {
			return err
		}
		c.Prio = prio
	}
	return nil
}

// priority reads a chain priority: a number, or a standard name with an
// optional offset ("dstnat - 10").
func priority(v any, path string) (int, error) {
	if s, ok := v.(string); ok {
		f := strings.Fields(s)
		base, ok := namedPriority(f[0:min(1, len(f))])
		if !ok {
			return 0, fmt.Errorf("%s: unknown priority %q", path, s)
		}
		if len(f) == 3 && (f[1] == "+" || f[1] == "-") {
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return 0, fmt.Errorf("%s: unknown priority %q", path, s)
			}
			if f[1] == "-" {
				n = -n
			}
			return base + n, nil
		}
		if len(f) != 1 {
			return 0, fmt.Errorf("%s: unknown priority %q", path, s)
		}
		return base, nil
	}
	n, err := toInt(v, path)
	return int(n), err
}

func namedPriority(f []string) (int, bool) {
	if len(f) == 0 {
		return 0, false
	}
	switch f[0] {
	case "raw":
		return -300, true
	case "mangle":
		return -150, true
	case "dstnat":
		return -100, true
	case "filter":
		return 0, true
	case "security":
		return 50, true
	case "srcnat":
		return 100, true
	}
	n, err := strconv.Atoi(f[0])
	return n, err == nil
}

func (p *parser) rule(body any, path string) error {
	m, err := asObject(body, path)
	if err != nil {
		return err
	}
	t, err := p.owner(m, path)
	if err != nil {
		return err
	}
	cname, err := reqStr(m, "chain", path)
	if err != nil {
		return err
	}
	c, created := t.chainNamed(cname)
	if created {
		// `nft -j list ruleset` lists chains before their rules; a rule
		// alone (a hand-made excerpt) declares its chain.
		p.note(t.Family, "%s: rule of chain %s, which the input does not declare", path, cname)
	}
	r := &Rule{Chain: cname, Path: strings.TrimSuffix(path, ".rule")}
	h, err := optInt(m, "handle", path)
	if err != nil {
		return err
	}
	r.Handle = int(h)
	if r.Comment, err = optStr(m, "comment", path); err != nil {
		return err
	}
	exprs, ok := m["expr"].([]any)
	if !ok {
		if _, has := m["expr"]; has {
			return fmt.Errorf("%s.expr: want an array, got %s", path, jsonType(m["expr"]))
		}
		return fmt.Errorf("%s: missing \"expr\"", path)
	}
	for i, e := range exprs {
		sp := fmt.Sprintf("%s.expr[%d]", path, i)
		st, err := p.stmt(e, sp, t.Family)
		if err == nil {
			err = checkStmt(st, sp, t.Family)
		}
		if err != nil {
			return fmt.Errorf("table %s chain %s rule handle %d: %w", t.ID(), cname, r.Handle, err)
		}
		r.Stmts = append(r.Stmts, st)
	}
	c.Rules = append(c.Rules, r)
	return nil
}

func (p *parser) counter(body any, path string) error {
	m, err := asObject(body, path)
	if err != nil {
		return err
	}
	t, err := p.owner(m, path)
	if err != nil {
		return err
	}
	c := &Counter{}
	if c.Name, err = reqStr(m, "name", path); err != nil {
		return err
	}
	h, err := optInt(m, "handle", path)
	if err != nil {
		return err
	}
	c.Handle = int(h)
	if c.Packets, err = optInt(m, "packets", path); err != nil {
		return err
	}
	if c.Bytes, err = optInt(m, "bytes", path); err != nil {
		return err
	}
	t.Counters = append(t.Counters, c)
	return nil
}

// chainNamed returns the table's chain of that name, creating it (in
// order of appearance) when it is new.
func (t *Table) chainNamed(name string) (*Chain, bool) {
	if c := t.chains[name]; c != nil {
		return c, false
	}
	c := &Chain{Name: name}
	t.chains[name] = c
	t.Chains = append(t.Chains, c)
	return c, true
}
