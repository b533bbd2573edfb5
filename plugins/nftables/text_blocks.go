package nftables

import (
	"encoding/json"
	"strconv"
	"strings"
)

// otherBlock keeps an object the reader does not read (a quota, a ct
// helper, a flowtable) by kind and name, as the JSON parser does.
func (r *textReader) otherBlock(start token) error {
	words := []string{start.text}
	for !r.c.peek().is("{") {
		t := r.c.next()
		if t.kind == tokNL || r.c.done() {
			return errAt(start, "want a chain, set, map or object (`KIND NAME {`), got %s", start)
		}
		words = append(words, t.text)
	}
	r.c.next()
	if err := r.skipBraces(start); err != nil {
		return err
	}
	kind := strings.Join(words[:max(1, len(words)-1)], " ")
	name := ""
	if len(words) > 1 {
		name = words[len(words)-1]
	}
	r.add(kind, map[string]any{"family": r.family, "table": r.table, "name": name}, start.line)
	return nil
}

// skipBraces skips to the brace that closes the one just read.
func (r *textReader) skipBraces(start token) error {
	for depth := 1; depth > 0; {
		if r.c.done() {
			return errAt(r.c.peek(), "input ends inside the block opened on line %d", start.line)
		}
		t := r.c.next()
		switch {
		case t.is("{"):
			depth++
		case t.is("}"):
			depth--
		}
	}
	return nil
}

func (r *textReader) counterBlock(start token) error {
	name, err := r.name("counter")
	if err != nil {
		return err
	}
	r.c.next() // {
	body := r.add("counter", map[string]any{"family": r.family, "table": r.table, "name": name.text}, start.line)
	for {
		r.skipBlank()
		t := r.c.next()
		switch {
		case t.is("}"):
			return nil
		case r.c.done() && t.kind == tokNL:
			return errAt(t, "input ends inside counter %s", name.text)
		case t.is("packets"), t.is("bytes"):
			v := r.c.next()
			n, err := strconv.ParseInt(v.text, 10, 64)
			if err != nil {
				return errAt(v, "want a number of %s, got %s", t.text, v)
			}
			body[t.text] = json.Number(strconv.FormatInt(n, 10))
		}
	}
}

// isElision: a word that stands for what a paste left out ("....").
func isElision(t token) bool {
	return t.kind == tokWord && (t.text == "…" || len(t.text) >= 3 && strings.Trim(t.text, ".") == "")
}

// elision notes what a paste left out and skips the rest of its line.
func (r *textReader) elision(t token) {
	r.elided = true
	for !r.c.done() && r.c.peek().kind != tokNL && !r.c.peek().is("}") {
		r.c.next()
	}
	r.note(t, "line %d: %q: the text leaves something out here; what it leaves out is not read", t.line, t.text)
}
