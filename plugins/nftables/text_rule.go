package nftables

import (
	"encoding/json"
	"strconv"
	"strings"
)

// readRule turns the tokens of one rule line into the rule's JSON shape.
// What it cannot read, from there to the end of the rule, is kept as one
// unknown statement (the JSON parser notes it, naming the line).
func (r *textReader) readRule(toks []token, chain string) map[string]any {
	rule := map[string]any{"family": r.family, "table": r.table, "chain": chain}
	// A trailing comment: `# handle N` of `nft -a`, or what nft could not
	// print (iptables-nft's `# xt_…`).
	if n := len(toks); n > 0 && toks[n-1].kind == tokComment {
		c := toks[n-1]
		toks = toks[:n-1]
		if h, ok := strings.CutPrefix(c.text, "handle "); ok {
			if v, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
				rule["handle"] = json.Number(strconv.Itoa(v))
			}
		} else {
			r.note(c, "line %d, column %d: comment kept without being read: #%s", c.line, c.col, c.text)
		}
	}
	if n := len(toks); n >= 2 && toks[n-2].is("comment") && toks[n-1].kind == tokString {
		rule["comment"] = toks[n-1].text
		toks = toks[:n-2]
	}
	c := newCursor(toks)
	stmts := []any{}
	for !c.done() {
		start := c.i
		st, ok := r.stmt(c)
		if !ok {
			c.i = start
			t := c.peek()
			kind := t.text
			if t.kind != tokWord || knownStmt(kind) {
				kind = "unparsed"
			}
			// The JSON parser notes it, naming the line.
			st = map[string]any{kind: joinTokens(toks[start:])}
			c.i = len(toks)
		}
		stmts = append(stmts, st)
	}
	rule["expr"] = stmts
	return rule
}

func knownStmt(k string) bool {
	switch k {
	case "match", "vmap", "mangle", "dnat", "snat", "masquerade", "redirect", "reject", "set", "map",
		"counter", "log", "notrack", "limit", "xt", "accept", "drop", "continue", "return", "jump", "goto":
		return true
	}
	return false
}

// stmt reads one statement; false when it cannot.
func (r *textReader) stmt(c *cursor) (any, bool) {
	t := c.next()
	if t.kind != tokWord {
		return nil, false
	}
	switch t.text {
	case "accept", "drop", "continue", "return":
		return map[string]any{t.text: nil}, true
	case "jump", "goto":
		n := c.next()
		if n.kind != tokWord && n.kind != tokString {
			return nil, false
		}
		return map[string]any{t.text: map[string]any{"target": n.text}}, true
	case "counter":
		if c.take("name") {
			return map[string]any{"counter": c.next().text}, true
		}
		body := map[string]any{}
		for _, k := range []string{"packets", "bytes"} {
			if c.take(k) {
				n, ok := number(c.next().text)
				if !ok {
					return nil, false
				}
				body[k] = n
			}
		}
		return map[string]any{"counter": body}, true
	case "notrack":
		return map[string]any{"notrack": nil}, true
	case "log":
		body := map[string]any{}
		for {
			k := c.peek()
			if !(k.is("prefix") || k.is("level") || k.is("group") || k.is("snaplen") || k.is("queue-threshold") || k.is("flags")) {
				break
			}
			c.next()
			body[k.text] = c.next().text
		}
		return map[string]any{"log": body}, true
	case "limit":
		words := []string{}
		for c.peek().kind == tokWord && (c.peek().is("rate") || c.peek().is("over") || c.peek().is("burst") ||
			strings.Contains(c.peek().text, "/") || isDigits(c.peek().text) || c.peek().is("packets") || c.peek().is("bytes")) {
			words = append(words, c.next().text)
		}
		return map[string]any{"limit": strings.Join(words, " ")}, true
	case "reject":
		return r.reject(c), true
	case "xt":
		kind, name := c.next(), c.next()
		return map[string]any{"xt": map[string]any{"type": kind.text, "name": name.text}}, true
	case "dnat", "snat", "masquerade", "redirect":
		return r.nat(t.text, c)
	case "update", "add", "delete":
		return r.setUpdate(t.text, c)
	}
	c.i--
	left, ok := r.selector(c)
	if !ok {
		return nil, false
	}
	switch {
	case c.take("set"):
		v, ok := r.rhs(c)
		if !ok {
			return nil, false
		}
		return map[string]any{"mangle": map[string]any{"key": left, "value": v}}, true
	case c.take("vmap"):
		d, ok := r.mapData(c)
		if !ok {
			return nil, false
		}
		return map[string]any{"vmap": map[string]any{"key": left, "data": d}}, true
	}
	op := "=="
	if bitmask(left) {
		op = "in"
	}
	switch o := c.peek(); {
	case o.is("=="), o.is("!="), o.is("<"), o.is(">"), o.is("<="), o.is(">="):
		op = o.text
		c.next()
	case o.is("eq"), o.is("ne"), o.is("lt"), o.is("gt"), o.is("le"), o.is("ge"):
		op = map[string]string{"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}[o.text]
		c.next()
	}
	right, ok := r.value(c, true)
	if !ok {
		return nil, false
	}
	return map[string]any{"match": map[string]any{"op": op, "left": left, "right": right}}, true
}

// bitmask: the field is a set of flags, which an implicit comparison
// tests with "in" (ct state new).
func bitmask(e any) bool {
	m, ok := e.(map[string]any)
	if !ok {
		return false
	}
	if ct, ok := m["ct"].(map[string]any); ok {
		k := ct["key"]
		return k == "state" || k == "status"
	}
	if pl, ok := m["payload"].(map[string]any); ok {
		return pl["protocol"] == "tcp" && pl["field"] == "flags"
	}
	return false
}

func (r *textReader) reject(c *cursor) any {
	typ := map[string]string{"ip": "icmp", "ip6": "icmpv6"}[r.family]
	if typ == "" {
		typ = "icmpx"
	}
	body := map[string]any{"type": typ, "expr": "port-unreachable"}
	if c.take("with") {
		kind := c.next().text
		if kind == "tcp" {
			c.take("reset")
			return map[string]any{"reject": map[string]any{"type": "tcp reset"}}
		}
		c.take("type")
		body = map[string]any{"type": kind, "expr": c.next().text}
	}
	return map[string]any{"reject": body}
}

func (r *textReader) nat(kind string, c *cursor) (any, bool) {
	body := map[string]any{}
	if f := c.peek(); (f.is("ip") || f.is("ip6")) && c.peekAt(1).is("to") {
		body["family"] = f.text
		c.next()
	}
	if c.take("to") {
		a := c.peek()
		switch {
		case strings.HasPrefix(a.text, ":"):
			c.next()
			p, ok := r.atom(a.text[1:])
			if !ok {
				return nil, false
			}
			body["port"] = p
		case isSelector(a.text):
			e, ok := r.selector(c)
			if !ok || !c.take("map") {
				return nil, false
			}
			d, ok := r.mapData(c)
			if !ok {
				return nil, false
			}
			body["addr"] = map[string]any{"map": map[string]any{"key": e, "data": d}}
		default:
			c.next()
			addr, port := splitAddrPort(a.text)
			av, ok := r.atom(addr)
			if !ok {
				return nil, false
			}
			body["addr"] = av
			if port != "" {
				if body["port"], ok = r.atom(port); !ok {
					return nil, false
				}
			}
		}
	}
	var flags []any
	for w := c.peek(); w.is("fully-random") || w.is("random") || w.is("persistent"); w = c.peek() {
		flags = append(flags, c.next().text)
		c.take(",")
	}
	if len(flags) > 0 {
		body["flags"] = flags
	}
	if len(body) == 0 {
		return map[string]any{kind: nil}, true
	}
	return map[string]any{kind: body}, true
}

// splitAddrPort splits 10.0.0.1:80 and [fd00::1]:80.
func splitAddrPort(s string) (string, string) {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 {
			return s[1:i], strings.TrimPrefix(s[i+1:], ":")
		}
	}
	if strings.Count(s, ":") == 1 {
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:]
	}
	return s, ""
}

// setUpdate reads `update @set { ip saddr timeout 3h }`.
func (r *textReader) setUpdate(op string, c *cursor) (any, bool) {
	ref := c.next()
	if !strings.HasPrefix(ref.text, "@") || !c.take("{") {
		return nil, false
	}
	key, ok := r.selector(c)
	if !ok {
		return nil, false
	}
	if c.take("timeout") {
		n, ok := durationOrNumber(c.next().text, true)
		if !ok {
			return nil, false
		}
		key = map[string]any{"elem": map[string]any{"val": key, "timeout": n}}
	}
	body := map[string]any{"op": op, "elem": key}
	kind := "set"
	if c.take(":") {
		d, ok := r.rhs(c)
		if !ok {
			return nil, false
		}
		body["data"], kind = d, "map"
	}
	if !c.take("}") {
		return nil, false
	}
	body[kind] = ref.text
	return map[string]any{kind: body}, true
}
