package nftables

import (
	"fmt"
	"strings"
)

// elements reads the elements of a set or map up to close: each a key
// (values joined by " . "), its timeout, expiry, counter and comment, and
// for a map ": data" (a verdict or values).
func (r *textReader) elements(c *cursor, isMap bool, close string) ([]any, error) {
	out := []any{}
	for {
		if c.take(close) || c.done() {
			return out, nil
		}
		start := c.peek()
		if isElision(start) {
			c.next()
			r.elided = true
			r.note(start, "line %d: %q: the text leaves elements out here; they are not read", start.line, start.text)
			c.take(",")
			continue
		}
		key, ok := r.concatValue(c)
		if !ok {
			return nil, errAt(start, "want a set element, got %s", start)
		}
		meta := map[string]any{}
		for {
			switch m := c.peek(); {
			case m.is("timeout"), m.is("expires"):
				c.next()
				v := c.next()
				n, ok := durationOrNumber(v.text, true)
				if !ok {
					return nil, errAt(v, "want a duration after %s, got %s", m.text, v)
				}
				meta[m.text] = n
				continue
			case m.is("comment"):
				c.next()
				v := c.next()
				if v.kind != tokString {
					return nil, errAt(v, "want a quoted comment, got %s", v)
				}
				meta["comment"] = v.text
				continue
			case m.is("counter"):
				c.next()
				for c.take("packets") || c.take("bytes") {
					c.next()
				}
				continue
			}
			break
		}
		var el any = key
		if len(meta) > 0 {
			meta["val"] = key
			el = map[string]any{"elem": meta}
		}
		if c.take(":") {
			d, ok := r.elemData(c)
			if !ok {
				return nil, errAt(c.peek(), "want the data of a map element, got %s", c.peek())
			}
			el = []any{el, d}
		} else if isMap {
			return nil, errAt(c.peek(), "want \":\" and the data of a map element, got %s", c.peek())
		}
		out = append(out, el)
		if !c.take(",") && !c.peek().is(close) {
			return nil, errAt(c.peek(), "want \",\" or %q after a set element, got %s", close, c.peek())
		}
	}
}

func (r *textReader) elemData(c *cursor) (any, bool) {
	switch t := c.peek(); {
	case t.is("accept"), t.is("drop"), t.is("continue"), t.is("return"):
		c.next()
		return map[string]any{t.text: nil}, true
	case t.is("jump"), t.is("goto"):
		c.next()
		n := c.next()
		if n.kind != tokWord && n.kind != tokString {
			return nil, false
		}
		return map[string]any{t.text: map[string]any{"target": n.text}}, true
	}
	return r.concatValue(c)
}

// parseText reads the text form of `nft list ruleset`: it builds the
// objects `nft -j list ruleset` prints for the same ruleset and reads them
// with the JSON parser. Positions are lines (and columns) of the text.
func parseText(source string, data []byte) (*Ruleset, error) {
	toks, err := lexTokens(data)
	if err != nil {
		return nil, fmt.Errorf("nftables: %s: %w", source, err)
	}
	r := &textReader{c: newCursor(toks)}
	if err := r.top(); err != nil {
		if at := iptablesSign(toks); at != nil {
			return nil, iptablesNFTError(source, *at)
		}
		return nil, fmt.Errorf("nftables: %s: %w", source, err)
	}
	if at := iptablesSign(toks); at != nil && !r.kubeProxy {
		return nil, iptablesNFTError(source, *at)
	}
	p := &parser{rs: &Ruleset{Source: source}, tables: map[string]*Table{}}
	for i, it := range r.items {
		p.at = i
		if err := p.object(it.v, fmt.Sprintf("line %d", it.line)); err != nil {
			return nil, fmt.Errorf("nftables: %s: %w", source, err)
		}
	}
	for _, n := range r.notes {
		p.rs.Notes = append(p.rs.Notes, Note{Family: n.family, Text: source + ": " + n.text, at: len(r.items)})
	}
	for _, t := range p.rs.Tables {
		for _, s := range t.Sets {
			s.buildIndex()
		}
	}
	return p.rs, nil
}

func iptablesNFTError(source string, at token) error {
	return fmt.Errorf("nftables: %s: line %d, column %d: these are iptables rules (iptables-nft backend) printed by nft; run `iptables-save` (and `ip6tables-save`) on the node and give that", source, at.line, at.col)
}

// iptablesSign finds the first sign that text holds iptables-nft's rules:
// nft's warning that a table is managed by iptables-nft, an iptables
// extension nft prints as `xt …` or `# xt_…`, or a chain of iptables'
// kube-proxy (KUBE-…, which kube-proxy's nftables mode never names so).
func iptablesSign(toks []token) *token {
	for i := range toks {
		t := &toks[i]
		switch {
		case t.kind == tokComment && (strings.Contains(t.text, "managed by iptables-nft") || strings.HasPrefix(t.text, "xt_")):
			return t
		case t.is("xt") && i+1 < len(toks) && (toks[i+1].is("match") || toks[i+1].is("target")):
			return t
		case t.is("chain") && i+1 < len(toks) && strings.HasPrefix(toks[i+1].text, "KUBE-"):
			return &toks[i+1]
		}
	}
	return nil
}
