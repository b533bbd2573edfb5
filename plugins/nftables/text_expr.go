package nftables

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
)

// payloadProto: a protocol whose header fields nft prints as `PROTO FIELD`.
func payloadProto(s string) bool {
	switch s {
	case "ip", "ip6", "tcp", "udp", "th", "sctp", "udplite", "dccp", "icmp", "icmpv6", "ether", "vlan", "arp", "ah", "esp", "comp", "igmp", "gre":
		return true
	}
	return false
}

// bareMeta: a meta key nft prints without `meta`.
func bareMeta(s string) bool {
	switch s {
	case "iifname", "oifname", "iif", "oif", "iiftype", "oiftype", "iifgroup", "oifgroup", "skuid", "skgid", "pkttype", "cpu", "cgroup", "nftrace", "mark":
		return true
	}
	return false
}

func isSelector(s string) bool {
	return payloadProto(s) || bareMeta(s) || s == "meta" || s == "ct" || s == "fib" || s == "numgen" || s == "jhash" || s == "symhash"
}

// selector reads a packet expression: one, a concatenation of them
// (`ip daddr . meta l4proto . th dport`), or one with a bit operation
// (`meta mark & 0x4000`).
func (r *textReader) selector(c *cursor) (any, bool) {
	var parts []any
	for {
		e, ok := r.single(c)
		if !ok {
			return nil, false
		}
		for o := c.peek(); o.is("&") || o.is("|") || o.is("^") || o.is("<<") || o.is(">>"); o = c.peek() {
			c.next()
			v, ok := r.operand(c)
			if !ok {
				return nil, false
			}
			e = map[string]any{o.text: []any{e, v}}
		}
		parts = append(parts, e)
		if !c.peek().is(".") || !isSelector(c.peekAt(1).text) {
			break
		}
		c.next()
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return map[string]any{"concat": parts}, true
}

// operand is the right side of a bit operation: a value or an expression.
func (r *textReader) operand(c *cursor) (any, bool) {
	if isSelector(c.peek().text) {
		return r.single(c)
	}
	t := c.next()
	return r.atomTok(t)
}

func (r *textReader) single(c *cursor) (any, bool) {
	t := c.next()
	switch {
	case payloadProto(t.text):
		f := c.next()
		if f.kind != tokWord || f.is("option") || f.is("exthdr") || isSelector(f.text) {
			return nil, false
		}
		return map[string]any{"payload": map[string]any{"protocol": t.text, "field": f.text}}, true
	case bareMeta(t.text):
		return map[string]any{"meta": map[string]any{"key": t.text}}, true
	case t.is("meta"):
		k := c.next()
		if k.kind != tokWord {
			return nil, false
		}
		return map[string]any{"meta": map[string]any{"key": k.text}}, true
	case t.is("ct"):
		body := map[string]any{}
		if d := c.peek(); d.is("original") || d.is("reply") {
			body["dir"] = c.next().text
		}
		fam := ""
		if f := c.peek(); (f.is("ip") || f.is("ip6")) && c.peekAt(1).kind == tokWord {
			fam = c.next().text + " "
		}
		k := c.next()
		if k.kind != tokWord {
			return nil, false
		}
		// nft -j writes `ct original ip daddr` as the key "ip daddr".
		body["key"] = fam + k.text
		return map[string]any{"ct": body}, true
	case t.is("fib"):
		var flags []any
		for {
			f := c.next()
			if !(f.is("saddr") || f.is("daddr") || f.is("mark") || f.is("iif") || f.is("oif")) {
				return nil, false
			}
			flags = append(flags, f.text)
			if !c.take(".") {
				break
			}
		}
		res := c.next()
		if !(res.is("type") || res.is("oif") || res.is("oifname")) {
			return nil, false
		}
		return map[string]any{"fib": map[string]any{"result": res.text, "flags": flags}}, true
	case t.is("numgen"), t.is("symhash"), t.is("jhash"):
		body := map[string]any{}
		if t.is("numgen") {
			body["mode"] = c.next().text
		}
		if t.is("jhash") {
			e, ok := r.selector(c)
			if !ok {
				return nil, false
			}
			body["expr"] = e
		}
		for _, k := range []string{"mod", "seed", "offset"} {
			if c.take(k) {
				n, ok := number(c.next().text)
				if !ok {
					return nil, false
				}
				body[k] = n
			}
		}
		if _, ok := body["mod"]; !ok {
			return nil, false
		}
		if _, ok := body["offset"]; !ok && t.is("numgen") {
			body["offset"] = json.Number("0")
		}
		return map[string]any{t.text: body}, true
	}
	return nil, false
}

// rhs is the value a statement sets: an expression or a value.
func (r *textReader) rhs(c *cursor) (any, bool) {
	if isSelector(c.peek().text) {
		return r.selector(c)
	}
	return r.value(c, false)
}

// value reads the right side of a comparison: a set reference, an
// anonymous set, a value or a concatenation of values, and (when list) a
// list of flags (`established,related`).
func (r *textReader) value(c *cursor, list bool) (any, bool) {
	t := c.peek()
	switch {
	case t.kind == tokWord && strings.HasPrefix(t.text, "@"):
		c.next()
		return t.text, true
	case t.is("{"):
		c.next()
		els, err := r.elements(c, false, "}")
		if err != nil {
			return nil, false
		}
		return map[string]any{"set": els}, true
	}
	v, ok := r.concatValue(c)
	if !ok || !list || !c.peek().is(",") {
		return v, ok
	}
	out := []any{v}
	for c.take(",") {
		w, ok := r.concatValue(c)
		if !ok {
			return nil, false
		}
		out = append(out, w)
	}
	return out, true
}

func (r *textReader) concatValue(c *cursor) (any, bool) {
	var parts []any
	for {
		v, ok := r.atomTok(c.next())
		if !ok {
			return nil, false
		}
		parts = append(parts, v)
		if !c.take(".") {
			break
		}
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return map[string]any{"concat": parts}, true
}

func (r *textReader) atomTok(t token) (any, bool) {
	switch t.kind {
	case tokString:
		return t.text, true
	case tokWord:
		return r.atom(t.text)
	}
	return nil, false
}

// atom reads one value: a number (decimal or hex), a prefix, a range, a
// name or an address.
func (r *textReader) atom(s string) (any, bool) {
	if s == "" || strings.HasPrefix(s, "@") {
		return nil, false
	}
	if n, ok := number(s); ok {
		return n, true
	}
	if i := strings.LastIndexByte(s, '/'); i > 0 {
		if a, err := netip.ParseAddr(s[:i]); err == nil {
			if l, err := strconv.Atoi(s[i+1:]); err == nil && l >= 0 && l <= a.BitLen() {
				return map[string]any{"prefix": map[string]any{"addr": s[:i], "len": json.Number(strconv.Itoa(l))}}, true
			}
		}
	}
	if i := strings.IndexByte(s, '-'); i > 0 {
		lo, hi := s[:i], s[i+1:]
		if a, b := rangeBound(lo), rangeBound(hi); a != nil && b != nil {
			return map[string]any{"range": []any{a, b}}, true
		}
	}
	return s, true
}

func rangeBound(s string) any {
	if n, ok := number(s); ok {
		return n
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return s
	}
	return nil
}

func number(s string) (json.Number, bool) {
	if isDigits(s) {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return json.Number(strconv.FormatUint(n, 10)), true
		}
	}
	if h, ok := strings.CutPrefix(s, "0x"); ok && h != "" {
		if n, err := strconv.ParseUint(h, 16, 64); err == nil {
			return json.Number(strconv.FormatUint(n, 10)), true
		}
	}
	return "", false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// mapData reads a map's data in a vmap or map expression: @name or an
// anonymous map `{ 0 : goto x, 1 : goto y }`.
func (r *textReader) mapData(c *cursor) (any, bool) {
	t := c.next()
	if t.kind == tokWord && strings.HasPrefix(t.text, "@") {
		return t.text, true
	}
	if !t.is("{") {
		return nil, false
	}
	els, err := r.elements(c, true, "}")
	if err != nil {
		return nil, false
	}
	return map[string]any{"set": els}, true
}
