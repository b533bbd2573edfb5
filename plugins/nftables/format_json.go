package nftables

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// RenderJSON writes a ruleset in the form of `nft -j list ruleset`, which
// Parse reads back to the same ruleset: a ruleset read over netlink is
// kept in a snapshot as the JSON nft would have printed. Per table: the
// chains, the sets and maps (whose verdicts name chains), the counters and
// other objects, then the rules (so that `nft -j -f` can load it too). Expressions only Parse makes (a limit,
// something it did not understand) have no rendering: an error.
func RenderJSON(rs *Ruleset) ([]byte, error) {
	w := &jsonWriter{buf: make([]byte, 0, 1<<16)}
	w.raw(`{"nftables": [{"metainfo": {`)
	if rs.Version != "" {
		w.raw(`"version": `)
		w.str(rs.Version)
		w.raw(", ")
	}
	w.raw(`"json_schema_version": 1}}`)
	for _, t := range rs.Tables {
		w.raw(`, {"table": {"family": `)
		w.str(t.Family)
		w.raw(`, "name": `)
		w.str(t.Name)
		w.handle(t.Handle)
		w.optStr(", \"comment\": ", t.Comment)
		w.raw("}}")
	}
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			w.chain(t, c)
		}
		for _, s := range t.Sets {
			w.set(t, s)
		}
		for _, c := range t.Counters {
			w.object("counter", t, c.Name, c.Handle)
			w.int(", \"packets\": ", c.Packets)
			w.int(", \"bytes\": ", c.Bytes)
			w.raw("}}")
		}
		for _, o := range t.Objects {
			w.object(o.Kind, t, o.Name, o.Handle)
			w.raw("}}")
		}
		for _, c := range t.Chains {
			for _, r := range c.rules() {
				w.rule(t, r)
			}
		}
	}
	w.raw("]}\n")
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

type jsonWriter struct {
	buf []byte
	err error
}

func (w *jsonWriter) raw(s string) { w.buf = append(w.buf, s...) }

func (w *jsonWriter) int(prefix string, n int64) {
	w.raw(prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
}

func (w *jsonWriter) optStr(prefix, s string) {
	if s != "" {
		w.raw(prefix)
		w.str(s)
	}
}

// str writes a JSON string.
func (w *jsonWriter) str(s string) {
	w.buf = append(w.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.buf = append(w.buf, '\\', c)
		case c < 0x20:
			w.buf = fmt.Appendf(w.buf, `\u%04x`, c)
		case c < utf8.RuneSelf:
			w.buf = append(w.buf, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				w.buf = append(w.buf, `\ufffd`...)
			} else {
				w.buf = append(w.buf, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	w.buf = append(w.buf, '"')
}

func (w *jsonWriter) strs(ss []string) {
	if len(ss) == 1 {
		w.str(ss[0])
		return
	}
	w.raw("[")
	w.each(len(ss), func(i int) { w.str(ss[i]) })
	w.raw("]")
}

// each writes n items, separated by commas.
func (w *jsonWriter) each(n int, item func(i int)) {
	for i := range n {
		if i > 0 {
			w.raw(", ")
		}
		item(i)
	}
}

// object starts a named object of a table: {"KIND": {"family": ...,
// "name": ..., "table": ..., "handle": N (left open).
func (w *jsonWriter) object(kind string, t *Table, name string, handle int) {
	w.raw(", {")
	w.str(kind)
	w.raw(`: {"family": `)
	w.str(t.Family)
	w.raw(`, "name": `)
	w.str(name)
	w.raw(`, "table": `)
	w.str(t.Name)
	w.handle(handle)
}

// handle writes a handle; 0 is none (a ruleset made to be loaded).
func (w *jsonWriter) handle(h int) {
	if h != 0 {
		w.int(`, "handle": `, int64(h))
	}
}

func (w *jsonWriter) set(t *Table, s *Set) {
	kind := "set"
	if s.IsMap {
		kind = "map"
	}
	w.object(kind, t, s.Name, s.Handle)
	if len(s.KeyType) > 0 {
		w.raw(`, "type": `)
		w.strs(s.KeyType)
	}
	if s.IsMap {
		w.raw(`, "map": `)
		w.strs(s.DataType)
	}
	if len(s.Flags) > 0 {
		w.raw(`, "flags": [`)
		w.each(len(s.Flags), func(i int) { w.str(s.Flags[i]) })
		w.raw("]")
	}
	if s.Timeout != 0 {
		w.int(`, "timeout": `, s.Timeout)
	}
	if s.Size != 0 {
		w.int(`, "size": `, int64(s.Size))
	}
	w.optStr(`, "comment": `, s.Comment)
	if len(s.Elements) > 0 {
		w.raw(`, "elem": [`)
		w.each(len(s.Elements), func(i int) { w.element(s.Elements[i]) })
		w.raw("]")
	}
	w.raw("}}")
}

// element writes a set's element, a map's [key, data] pair.
func (w *jsonWriter) element(el *Element) {
	if el.Data != nil {
		w.raw("[")
	}
	if el.Comment != "" || el.Timeout != 0 || el.Expires != 0 {
		w.raw(`{"elem": {"val": `)
		w.expr(el.Key)
		if el.Timeout != 0 {
			w.int(`, "timeout": `, el.Timeout)
		}
		if el.Expires != 0 {
			w.int(`, "expires": `, el.Expires)
		}
		w.optStr(`, "comment": `, el.Comment)
		w.raw("}}")
	} else {
		w.expr(el.Key)
	}
	if el.Data != nil {
		w.raw(", ")
		w.expr(el.Data)
		w.raw("]")
	}
}

func (w *jsonWriter) chain(t *Table, c *Chain) {
	w.object("chain", t, c.Name, c.Handle)
	if c.Base() {
		w.raw(`, "type": `)
		w.str(c.Type)
		w.raw(`, "hook": `)
		w.str(c.Hook)
		w.int(`, "prio": `, int64(c.Prio))
		w.optStr(`, "policy": `, c.Policy)
	}
	w.optStr(`, "comment": `, c.Comment)
	w.raw("}}")
}

func (w *jsonWriter) rule(t *Table, r *Rule) {
	w.raw(`, {"rule": {"family": `)
	w.str(t.Family)
	w.raw(`, "table": `)
	w.str(t.Name)
	w.raw(`, "chain": `)
	w.str(r.Chain)
	w.handle(r.Handle)
	w.optStr(`, "comment": `, r.Comment)
	w.raw(`, "expr": [`)
	w.each(len(r.Stmts), func(i int) { w.stmt(r.Stmts[i]) })
	w.raw("]}}")
}
