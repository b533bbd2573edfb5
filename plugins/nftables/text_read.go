package nftables

import (
	"fmt"
	"strconv"
	"strings"
)

// cursor walks a slice of tokens; past the end it sees end (a line end).
type cursor struct {
	toks []token
	i    int
	end  token
}

func newCursor(toks []token) *cursor {
	c := &cursor{toks: toks}
	if n := len(toks); n > 0 {
		last := toks[n-1]
		c.end = token{kind: tokNL, line: last.line, col: last.col + len(last.text) + 1}
	} else {
		c.end = token{kind: tokNL, line: 1, col: 1}
	}
	return c
}

func (c *cursor) peek() token { return c.peekAt(0) }

func (c *cursor) peekAt(k int) token {
	if c.i+k < len(c.toks) {
		return c.toks[c.i+k]
	}
	return c.end
}

func (c *cursor) next() token {
	t := c.peek()
	if c.i < len(c.toks) {
		c.i++
	}
	return t
}

func (c *cursor) done() bool { return c.i >= len(c.toks) }

// take consumes the next token when it is the word or punctuation s.
func (c *cursor) take(s string) bool {
	if c.peek().is(s) {
		c.i++
		return true
	}
	return false
}

func errAt(t token, format string, args ...any) error {
	return fmt.Errorf("line %d, column %d: %s", t.line, t.col, fmt.Sprintf(format, args...))
}

// textItem is one object of the ruleset in the shape `nft -j` prints it,
// with the line it was read from.
type textItem struct {
	v    map[string]any
	line int
}

// textNote is something the reader kept without reading it.
type textNote struct {
	family string
	line   int
	text   string
}

type textReader struct {
	c      *cursor
	items  []textItem
	notes  []textNote
	family string
	table  string
	// kubeProxy: a table named kube-proxy was read.
	kubeProxy bool
	// elided: the text leaves something out (a line "...."), so it may
	// end inside a block.
	elided bool
}

func (r *textReader) note(t token, format string, args ...any) {
	r.notes = append(r.notes, textNote{family: r.family, line: t.line, text: fmt.Sprintf(format, args...)})
}

func (r *textReader) add(kind string, body map[string]any, line int) map[string]any {
	r.items = append(r.items, textItem{v: map[string]any{kind: body}, line: line})
	return body
}

// skipBlank skips line ends, semicolons and comments.
func (r *textReader) skipBlank() {
	for {
		t := r.c.peek()
		if r.c.done() || !(t.kind == tokNL || t.kind == tokComment || t.is(";")) {
			return
		}
		r.c.next()
	}
}

// name reads the name of a table, chain or set (a word or a string).
func (r *textReader) name(what string) (token, error) {
	t := r.c.next()
	if t.kind != tokWord && t.kind != tokString {
		return t, errAt(t, "want the name of the %s, got %s", what, t)
	}
	return t, nil
}

func (r *textReader) expect(s string) error {
	if t := r.c.next(); !t.is(s) {
		return errAt(t, "want %q, got %s", s, t)
	}
	return nil
}

// lineTokens reads the tokens up to the line end (or a semicolon when
// semi), outside braces; line ends and comments inside braces are left out.
// A trailing comment is kept.
func (r *textReader) lineTokens(semi bool) ([]token, error) {
	var out []token
	depth := 0
	for !r.c.done() {
		t := r.c.peek()
		if depth == 0 && (t.kind == tokNL || semi && t.is(";") || t.is("}")) {
			break
		}
		r.c.next()
		switch {
		case t.is("{"):
			depth++
		case t.is("}"):
			depth--
		case depth > 0 && (t.kind == tokNL || t.kind == tokComment):
			continue
		}
		out = append(out, t)
	}
	if depth > 0 {
		return nil, errAt(r.c.peek(), "input ends inside braces")
	}
	return out, nil
}

// top reads the tables of the ruleset.
func (r *textReader) top() error {
	for {
		r.skipBlank()
		if r.c.done() {
			return nil
		}
		t := r.c.next()
		switch {
		case isElision(t):
			r.elision(t)
		case t.is("table"):
			if err := r.tableBlock(t); err != nil {
				return err
			}
		case t.is("chain"):
			return errAt(t, "a chain outside a table: the family and table it belongs to are not shown; give the whole output of `nft list ruleset` (or `nft list table ip kube-proxy`)")
		default:
			return errAt(t, "want a table (`table FAMILY NAME {`), got %s", t)
		}
	}
}

func (r *textReader) tableBlock(start token) error {
	fam := r.c.next()
	if fam.kind != tokWord {
		return errAt(fam, "want the family of the table, got %s", fam)
	}
	name, err := r.name("table")
	if err != nil {
		return err
	}
	if err := r.expect("{"); err != nil {
		return err
	}
	r.family, r.table = fam.text, name.text
	if name.text == "kube-proxy" {
		r.kubeProxy = true
	}
	tb := r.add("table", map[string]any{"family": fam.text, "name": name.text}, start.line)
	for {
		r.skipBlank()
		t := r.c.next()
		switch {
		case t.is("}"):
			return nil
		case r.c.done() && t.kind == tokNL && r.elided:
			return nil
		case r.c.done() && t.kind == tokNL:
			return errAt(t, "input ends inside table %s %s (opened on line %d)", fam.text, name.text, start.line)
		case isElision(t):
			r.elision(t)
		case t.is("comment") && r.c.peek().kind == tokString:
			tb["comment"] = r.c.next().text
		case t.is("flags"):
			toks, _ := r.lineTokens(true)
			r.note(t, "line %d: table %s %s has flags %s; kept without being read", t.line, fam.text, name.text, joinTokens(toks))
		case t.is("chain"):
			if err := r.chainBlock(t); err != nil {
				return err
			}
		case t.is("set"), t.is("map"):
			if err := r.setBlock(t); err != nil {
				return err
			}
		case t.is("counter") && r.c.peekAt(1).is("{"):
			if err := r.counterBlock(t); err != nil {
				return err
			}
		case t.kind == tokWord:
			if err := r.otherBlock(t); err != nil {
				return err
			}
		default:
			return errAt(t, "want a chain, set, map or object of table %s %s, got %s", fam.text, name.text, t)
		}
	}
}

func joinTokens(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && !t.is(",") {
			b.WriteByte(' ')
		}
		if t.kind == tokString {
			b.WriteString(strconv.Quote(t.text))
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}
