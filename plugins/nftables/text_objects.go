package nftables

import (
	"encoding/json"
	"strconv"
	"strings"
)

func (r *textReader) chainBlock(start token) error {
	name, err := r.name("chain")
	if err != nil {
		return err
	}
	if err := r.expect("{"); err != nil {
		return err
	}
	ch := r.add("chain", map[string]any{"family": r.family, "table": r.table, "name": name.text}, start.line)
	for {
		r.skipBlank()
		t := r.c.peek()
		switch {
		case t.is("}"):
			r.c.next()
			return nil
		case r.c.done() && r.elided:
			return nil
		case r.c.done():
			return errAt(t, "input ends inside chain %s (opened on line %d)", name.text, start.line)
		case isElision(t):
			r.c.next()
			r.elision(t)
			continue
		case t.is("type") && r.c.peekAt(2).is("hook"):
			if err := r.chainType(ch); err != nil {
				return err
			}
			continue
		case t.is("policy"):
			r.c.next()
			ch["policy"] = r.c.next().text
			continue
		case t.is("comment") && r.c.peekAt(1).kind == tokString && (r.c.peekAt(2).kind == tokNL || r.c.peekAt(2).is(";")):
			r.c.next()
			ch["comment"] = r.c.next().text
			continue
		case t.is("devices") || t.is("device"):
			toks, _ := r.lineTokens(true)
			r.note(t, "line %d: chain %s: %s kept without being read", t.line, name.text, joinTokens(toks))
			continue
		}
		toks, err := r.lineTokens(false)
		if err != nil {
			return err
		}
		rule := r.readRule(toks, name.text)
		r.add("rule", rule, t.line)
	}
}

// chainType reads `type filter hook input priority filter;`.
func (r *textReader) chainType(ch map[string]any) error {
	r.c.next() // type
	ch["type"] = r.c.next().text
	r.c.next() // hook
	ch["hook"] = r.c.next().text
	for !r.c.peek().is("priority") {
		t := r.c.next()
		if t.kind == tokNL || t.is(";") {
			return nil
		}
		if t.is("device") {
			r.c.next()
		}
	}
	r.c.next()
	var words []string
	for !r.c.peek().is(";") && r.c.peek().kind != tokNL {
		words = append(words, r.c.next().text)
	}
	s := strings.Join(words, " ")
	if n, err := strconv.Atoi(s); err == nil {
		ch["prio"] = json.Number(strconv.Itoa(n))
	} else {
		ch["prio"] = s
	}
	return nil
}

func (r *textReader) setBlock(start token) error {
	name, err := r.name(start.text)
	if err != nil {
		return err
	}
	if err := r.expect("{"); err != nil {
		return err
	}
	s := r.add(start.text, map[string]any{"family": r.family, "table": r.table, "name": name.text}, start.line)
	isMap := start.text == "map"
	for {
		r.skipBlank()
		t := r.c.peek()
		switch {
		case t.is("}"):
			r.c.next()
			return nil
		case r.c.done() && r.elided:
			return nil
		case r.c.done():
			return errAt(t, "input ends inside %s %s (opened on line %d)", start.text, name.text, start.line)
		}
		r.c.next()
		if t.is("elements") {
			if err := r.expect("="); err != nil {
				return err
			}
			if !r.c.peek().is("{") {
				return errAt(r.c.peek(), "want { after elements =, got %s", r.c.peek())
			}
		}
		toks, err := r.lineTokens(true)
		if err != nil {
			return err
		}
		switch t.text {
		case "type":
			key, data := splitColon(toks)
			s["type"] = oneOrList(dotted(key))
			if isMap && len(data) > 0 {
				s["map"] = oneOrList(dotted(data))
			}
		case "typeof":
			key, data := splitColon(toks)
			s["type"] = oneOrList(typeofTypes(key))
			if isMap && len(data) > 0 {
				s["map"] = oneOrList(typeofTypes(data))
			}
		case "flags":
			var fl []any
			for _, x := range toks {
				if !x.is(",") {
					fl = append(fl, x.text)
				}
			}
			s["flags"] = fl
		case "timeout", "size":
			if len(toks) != 1 {
				return errAt(t, "want one value after %s", t.text)
			}
			n, ok := durationOrNumber(toks[0].text, t.text == "timeout")
			if !ok {
				return errAt(toks[0], "want a %s, got %s", map[bool]string{true: "duration", false: "number"}[t.text == "timeout"], toks[0])
			}
			s[t.text] = n
		case "comment":
			if len(toks) == 1 && toks[0].kind == tokString {
				s["comment"] = toks[0].text
			}
		case "elements":
			ec := newCursor(toks[1:])
			els, err := r.elements(ec, isMap, "}")
			if err != nil {
				return err
			}
			s["elem"] = els
		case "gc-interval", "policy", "auto-merge", "counter":
		default:
			r.note(t, "line %d: %s %s: %s kept without being read", t.line, start.text, name.text, joinTokens(append([]token{t}, toks...)))
		}
	}
}

// splitColon splits the words of a type at the colon of a map.
func splitColon(toks []token) ([]token, []token) {
	for i, t := range toks {
		if t.is(":") {
			return toks[:i], toks[i+1:]
		}
	}
	return toks, nil
}

// dotted reads `ipv4_addr . inet_service` as its parts.
func dotted(toks []token) []string {
	var out []string
	for _, t := range toks {
		if !t.is(".") {
			out = append(out, t.text)
		}
	}
	return out
}

func oneOrList(s []string) any {
	if len(s) == 1 {
		return s[0]
	}
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// typeofTypes gives the types of a `typeof` declaration's expressions.
func typeofTypes(toks []token) []string {
	var out []string
	var cur []string
	flush := func() {
		e := strings.Join(cur, " ")
		t := map[string]string{"ip saddr": "ipv4_addr", "ip daddr": "ipv4_addr", "ip6 saddr": "ipv6_addr", "ip6 daddr": "ipv6_addr",
			"meta l4proto": "inet_proto", "ip protocol": "inet_proto", "meta mark": "mark", "ct mark": "mark", "iifname": "ifname", "oifname": "ifname",
			"meta iifname": "ifname", "meta oifname": "ifname", "ether saddr": "ether_addr", "ether daddr": "ether_addr", "verdict": "verdict"}[e]
		if t == "" && len(cur) == 2 && (cur[1] == "dport" || cur[1] == "sport") {
			t = "inet_service"
		}
		if t == "" {
			t = "typeof " + e
		}
		out = append(out, t)
		cur = nil
	}
	for _, t := range toks {
		if t.is(".") {
			flush()
			continue
		}
		cur = append(cur, t.text)
	}
	if len(cur) > 0 {
		flush()
	}
	return out
}

// durationOrNumber reads a number, or (when dur) a duration such as 3h or
// 1d2h3m4s500ms, in seconds.
func durationOrNumber(s string, dur bool) (json.Number, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.Number(strconv.FormatInt(n, 10)), true
	}
	if !dur || s == "" {
		return "", false
	}
	var ms, n int64
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			n, digits = n*10+int64(c-'0'), true
			continue
		}
		if !digits {
			return "", false
		}
		switch {
		case c == 'd':
			ms += n * 86400000
		case c == 'h':
			ms += n * 3600000
		case c == 'm' && i+1 < len(s) && s[i+1] == 's':
			ms += n
			i++
		case c == 'm':
			ms += n * 60000
		case c == 's':
			ms += n * 1000
		default:
			return "", false
		}
		n, digits = 0, false
	}
	if digits {
		return "", false
	}
	return json.Number(strconv.FormatInt(ms/1000, 10)), true
}
