package nftables

import "unsafe"

// A narrow read takes the elements of kube-proxy's big sets and maps
// (thousands of ClusterIPs, a service-ips element per Service port)
// straight from their text: the elements plainElement reads from the
// decoded value, in their common forms. Anything else in the array, or
// text the JSON decoder could read another way (escapes, bytes outside
// ASCII, numbers that are not plain integers), leaves the array to the
// decoder.

// The values of the elements come from arrays of a few hundred, one
// allocation for each array rather than one per value, and their strings
// share the bytes of the document, which is never written (a dump's
// text, kept as long as the plane is).

// plainElems reads a set's "elem" array; ok is false when some element is
// not in a form read here.
func plainElems(raw []byte, isMap bool) ([]*Element, bool) {
	r := &elemReader{s: scanner{data: raw}}
	if !r.s.expect('[') {
		return nil, false
	}
	var out []*Element
	if r.s.expect(']') {
		r.s.ws()
		return nil, r.s.pos == len(raw)
	}
	for {
		el, ok := r.element(isMap)
		if !ok {
			return nil, false
		}
		out = append(out, el)
		if r.s.expect(']') {
			r.s.ws()
			return out, r.s.pos == len(raw)
		}
		if !r.s.expect(',') {
			return nil, false
		}
	}
}

type elemReader struct {
	s scanner
	// short holds the literals of short texts ("tcp", 80), which most
	// elements repeat: one literal serves them all (literals are never
	// changed once read).
	short map[string]*Literal

	elems    chunk[Element]
	literals chunk[Literal]
	concats  chunk[Concat]
	parts    chunk[Expr]
	verdicts chunk[Verdict]
}

// chunk hands out values from arrays of chunkSize.
type chunk[T any] struct{ free []T }

const chunkSize = 256

func (c *chunk[T]) next() *T {
	if len(c.free) == 0 {
		c.free = make([]T, chunkSize)
	}
	v := &c.free[0]
	c.free = c.free[1:]
	return v
}

// take is n values of a chunk, as a slice of no more capacity.
func (c *chunk[T]) take(n int) []T {
	if len(c.free) < n {
		c.free = make([]T, max(n, chunkSize))
	}
	v := c.free[:n:n]
	c.free = c.free[n:]
	return v
}

// docString is text, of the document, as a string sharing its bytes.
func docString(text []byte) string {
	if len(text) == 0 {
		return ""
	}
	return unsafe.String(&text[0], len(text))
}

// literal is newLiteral(text, num), shared for short texts.
func (r *elemReader) literal(text []byte, num bool) *Literal {
	if len(text) > 6 {
		l := r.literals.next()
		l.Text, l.Num = docString(text), num
		l.val, l.known = literalValue(l), true
		return l
	}
	if l := r.short[string(text)]; l != nil && l.Num == num {
		return l
	}
	l := newLiteral(string(text), num)
	if r.short == nil {
		r.short = map[string]*Literal{}
	}
	r.short[l.Text] = l
	return l
}

// element reads "10.96.0.10", 80, or [key, verdict] with a key of
// scalars ("10.96.0.10" or {"concat": ["10.96.0.10", "tcp", 80]}).
func (r *elemReader) element(isMap bool) (*Element, bool) {
	if r.s.peek() != '[' {
		if isMap {
			return nil, false
		}
		k, ok := r.scalar()
		el := r.elems.next()
		el.Key = k
		return el, ok
	}
	r.s.pos++
	var key Expr
	var ok bool
	if r.s.peek() == '{' {
		key, ok = r.concat()
	} else {
		key, ok = r.scalar()
	}
	if !ok || !r.s.expect(',') {
		return nil, false
	}
	v, ok := r.verdict()
	if !ok || !r.s.expect(']') {
		return nil, false
	}
	el := r.elems.next()
	el.Key = key
	el.setData(v)
	return el, true
}

// scalar reads a string (not a set's "@name") or an integer, as expr
// reads them.
func (r *elemReader) scalar() (*Literal, bool) {
	if r.s.peek() == '"' {
		text, esc, ok := r.s.str()
		if !ok || esc || !plainText(text) || len(text) > 0 && text[0] == '@' {
			return nil, false
		}
		return r.literal(text, false), true
	}
	d, start := r.s.data, r.s.pos
	i := start
	for i < len(d) && !scalarEnd[d[i]] {
		i++
	}
	if _, ok := plainInt(d[start:i]); !ok {
		return nil, false
	}
	r.s.pos = i
	return r.literal(d[start:i], true), true
}

// plainString reads a string of printable ASCII without escapes: its
// bytes are its value.
func (r *elemReader) plainString() (string, bool) {
	text, esc, ok := r.s.str()
	if !ok || esc || !plainText(text) {
		return "", false
	}
	return docString(text), true
}

// plainText: printable ASCII only.
func plainText(text []byte) bool {
	for _, c := range text {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// concat reads {"concat": [scalar, ...]}.
func (r *elemReader) concat() (*Concat, bool) {
	r.s.pos++ // '{'
	if k, ok := r.plainString(); !ok || k != "concat" || !r.s.expect(':') || !r.s.expect('[') {
		return nil, false
	}
	c := r.concats.next()
	c.Parts = r.parts.take(3)[:0]
	for {
		part, ok := r.scalar()
		if !ok {
			return nil, false
		}
		c.Parts = append(c.Parts, part)
		if r.s.expect(']') {
			return c, r.s.expect('}')
		}
		if !r.s.expect(',') {
			return nil, false
		}
	}
}

// verdict reads {"goto": {"target": "chain"}} (or jump), or {"accept":
// null} (drop, continue, return).
func (r *elemReader) verdict() (*Verdict, bool) {
	if !r.s.expect('{') {
		return nil, false
	}
	kind, ok := r.plainString()
	if !ok || !r.s.expect(':') {
		return nil, false
	}
	v := r.verdicts.next()
	v.Kind = kind
	switch kind {
	case "jump", "goto":
		if !r.s.expect('{') {
			return nil, false
		}
		if k, ok := r.plainString(); !ok || k != "target" || !r.s.expect(':') {
			return nil, false
		}
		if v.Target, ok = r.plainString(); !ok || !r.s.expect('}') {
			return nil, false
		}
	case "accept", "drop", "continue", "return":
		r.s.ws()
		if len(r.s.data)-r.s.pos < 4 || string(r.s.data[r.s.pos:r.s.pos+4]) != "null" {
			return nil, false
		}
		r.s.pos += 4
	default:
		return nil, false
	}
	return v, r.s.expect('}')
}
