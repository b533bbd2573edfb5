package nftables

import (
	"strconv"
)

// The narrow read (LoadNarrow) splits the document into the elements of
// its top-level "nftables" array without decoding them: a byte scan that
// follows strings (and their escapes) and the nesting of objects and
// arrays, and reads a rule's or a chain's family, table and name. Whatever
// the scan is not certain of makes it give up, and the document is parsed
// in full (Parse), which also gives the error of malformed input.

// ruleMarks are the words a rule's text holds that the checks over every
// rule look for (see Table.chainsMaybe): a rule without a mark cannot hold
// what a check reads, so it need not be decoded for it.
type ruleMarks uint16

const (
	// markTarget: "target", the key of a jump's or a goto's chain.
	markTarget ruleMarks = 1 << iota
	// markSetRef: a string "@...", a named set or map.
	markSetRef
	// markElem: "elem", which every set statement ("update @set { ip
	// saddr }") has.
	markElem
	// markSaddr, markIifname, markMangle, markMasquerade: the words of
	// the matches and statements Infer reads.
	markSaddr
	markIifname
	markMangle
	markMasquerade
	// markEscape: a string with an escape, which could spell any of the
	// above; such a rule has every mark.
	markEscape
	markAll ruleMarks = 1<<iota - 1
)

// markOf is the mark of one string token (its text between the quotes).
func markOf(s []byte, escaped bool) ruleMarks {
	if escaped {
		return markAll
	}
	if len(s) > 0 && s[0] == '@' {
		return markSetRef
	}
	switch string(s) {
	case "target":
		return markTarget
	case "elem":
		return markElem
	case "saddr":
		return markSaddr
	case "iifname":
		return markIifname
	case "mangle":
		return markMangle
	case "masquerade":
		return markMasquerade
	}
	return 0
}

// rawElem is one element of the top-level array.
type rawElem struct {
	start, end int
	// kind is the element's one key ("rule"); "" when the element is not
	// an object with one plain key (it is then decoded, which tells
	// what is wrong with it).
	kind string
	// fields are what the scan read of a rule's or chain's body (see
	// scanBody); plain says the body holds them, each once, as plain
	// strings, and nothing the scan could not read.
	family, table string
	// nameStart and nameEnd are where the name is in the document.
	nameStart, nameEnd int
	handle             int
	plain              bool
	// other: a chain's body has keys besides family, table, name and
	// handle (a base chain's hook, a comment): it is decoded in full.
	other bool
	marks ruleMarks
	// elemStart and elemEnd are where a set's or map's "elem" value is
	// (elemEnd 0: none, or more than one).
	elemStart, elemEnd int
}

// scanner walks the document.
type scanner struct {
	data []byte
	pos  int
	// stack holds the open brackets of the value being skipped.
	stack []byte
	// recent are strings made lately, given again for the same bytes
	// (kinds, families, tables, a chain's name in its rules).
	recent [8]string
	next   int
}

// intern is string(b), one made lately when there is one.
func (s *scanner) intern(b []byte) string {
	for _, r := range s.recent {
		if r == string(b) {
			return r
		}
	}
	r := string(b)
	s.recent[s.next] = r
	s.next = (s.next + 1) % len(s.recent)
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// peek is the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// expect consumes c after white space.
func (s *scanner) expect(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.pos++
	return true
}

// str reads a string token at pos: its text between the quotes and
// whether it holds an escape.
func (s *scanner) str() ([]byte, bool, bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	start := s.pos + 1
	end, esc, ok := stringEnd(s.data, start)
	if !ok {
		return nil, false, false
	}
	s.pos = end + 1
	return s.data[start:end], esc, true
}

// stringEnd finds the closing quote of a string whose text starts at i,
// and whether the text has an escape. (nft's strings are short: a loop
// beats a search.)
func stringEnd(d []byte, i int) (int, bool, bool) {
	esc := false
	for i < len(d) {
		for i < len(d) && !stringStop[d[i]] {
			i++
		}
		if i == len(d) {
			break
		}
		if d[i] == '"' {
			return i, esc, true
		}
		esc = true
		i += 2
	}
	return 0, false, false
}

// skip passes one value, collecting the marks of its strings when marks
// is not nil. Only strings and the pairing of brackets are checked; the
// decoding of the value checks the rest.
func (s *scanner) skip(marks *ruleMarks) bool {
	d := s.data
	s.ws()
	i := s.pos
	if i >= len(d) {
		return false
	}
	switch d[i] {
	case '{', '[':
	case '"':
		end, esc, ok := stringEnd(d, i+1)
		if !ok {
			return false
		}
		if marks != nil {
			*marks |= markOf(d[i+1:end], esc)
		}
		s.pos = end + 1
		return true
	default:
		// A scalar (null, 17): up to what follows it.
		j := i
		for j < len(d) && !scalarEnd[d[j]] {
			j++
		}
		s.pos = j
		return j > i
	}
	stack := s.stack[:0]
	for ; i < len(d); i++ {
		for i < len(d) && !structural[d[i]] {
			i++
		}
		if i == len(d) {
			break
		}
		switch c := d[i]; c {
		case '"':
			end, esc, ok := stringEnd(d, i+1)
			if !ok {
				return false
			}
			if marks != nil {
				*marks |= markOf(d[i+1:end], esc)
			}
			i = end
		case '{', '[':
			stack = append(stack, c)
		default: // '}', ']'
			if len(stack) == 0 || stack[len(stack)-1] != c-2 {
				return false // '{'+2 is '}', '['+2 is ']'
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				s.stack, s.pos = stack, i+1
				return true
			}
		}
	}
	s.stack = stack
	return false
}

// structural are the bytes skip stops at in a container, stringStop those
// stringEnd stops at, scalarEnd those that end a scalar.
var (
	structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}
	stringStop = [256]bool{'"': true, '\\': true}
	scalarEnd  = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}
)

// scanDocument splits data into the elements of its "nftables" array; ok
// is false when the scan is not certain of the document (malformed, or
// written in a way only a full decode reads as nft's): parse it in full.
func scanDocument(data []byte) ([]rawElem, bool) {
	s := &scanner{data: data}
	if !s.expect('{') {
		return nil, false
	}
	var elems []rawElem
	found := false
	for first := true; ; first = false {
		if first && s.expect('}') {
			break
		}
		key, esc, ok := s.str()
		if !ok || esc || !s.expect(':') {
			return nil, false
		}
		if string(key) == "nftables" {
			if found || s.peek() != '[' {
				return nil, false // decoding keeps the last
			}
			found = true
			if elems, ok = s.array(); !ok {
				return nil, false
			}
		} else if !s.skip(nil) {
			return nil, false
		}
		if s.expect('}') {
			break
		}
		if !s.expect(',') {
			return nil, false
		}
	}
	s.ws()
	return elems, found && s.pos == len(data)
}

// array reads the elements of the "nftables" array: a large one in two
// parts at once (see splitArray).
func (s *scanner) array() ([]rawElem, bool) {
	s.pos++ // '['
	// nft writes an element in some hundred bytes, or more.
	elems := make([]rawElem, 0, len(s.data)/256+16)
	if s.expect(']') {
		return elems, true
	}
	if split := splitPoint(s.data, s.pos); split > 0 {
		return s.splitArray(elems, split)
	}
	elems, ok, _ := s.elements(elems, -1)
	return elems, ok
}

// elements reads the array's elements from pos (after its '[' or a ',')
// up to and past the closing ']'. When an element's text (with the white
// space before it) starts at stop, it stops there instead: landed.
func (s *scanner) elements(elems []rawElem, stop int) (_ []rawElem, ok, landed bool) {
	for {
		if s.pos == stop {
			return elems, true, true
		}
		e, ok := s.element()
		if !ok {
			return nil, false, false
		}
		elems = append(elems, e)
		if s.expect(']') {
			return elems, true, false
		}
		if !s.expect(',') {
			return nil, false, false
		}
	}
}

// element reads one element: {"kind": {...}}.
func (s *scanner) element() (rawElem, bool) {
	e := rawElem{start: s.pos}
	if s.peek() != '{' {
		ok := s.skip(nil)
		e.end = s.pos
		return e, ok
	}
	s.pos++
	key, esc, ok := s.str()
	if !ok || !s.expect(':') {
		return e, false
	}
	kind := ""
	if !esc {
		kind = s.intern(key)
	}
	s.ws()
	switch kind {
	case "rule", "chain":
		ok = s.body(&e, kind)
	case "set", "map":
		ok = s.setBody(&e)
	default:
		ok = s.skip(nil)
	}
	if !ok {
		return e, false
	}
	if !s.expect('}') {
		// More than one key: decoding says so. The element ends at its
		// closing bracket.
		kind = ""
		for s.peek() == ',' {
			s.pos++
			if _, _, ok := s.str(); !ok || !s.expect(':') || !s.skip(nil) {
				return e, false
			}
		}
		if !s.expect('}') {
			return e, false
		}
	}
	e.kind, e.end = kind, s.pos
	return e, true
}

// body reads a rule's or a chain's body: its family, table and chain (a
// rule's) or name (a chain's), and a chain's handle; the marks of a
// rule's strings.
func (s *scanner) body(e *rawElem, kind string) bool {
	if s.peek() != '{' {
		return s.skip(nil)
	}
	s.pos++
	nameKey := "name"
	if kind == "rule" {
		nameKey = "chain"
	}
	var seen [4]bool
	plain := true
	for first := true; ; first = false {
		if first && s.expect('}') {
			break
		}
		key, esc, ok := s.str()
		if !ok || !s.expect(':') {
			return false
		}
		field := -1
		switch {
		case esc:
			plain = false
		case string(key) == "family":
			field = 0
		case string(key) == "table":
			field = 1
		case string(key) == nameKey:
			field = 2
		case string(key) == "handle" && kind == "chain":
			field = 3
		case kind == "chain":
			e.other = true
		}
		switch {
		case field >= 0 && seen[field]:
			plain = false
			if !s.skip(nil) {
				return false
			}
		case field == 3:
			seen[3] = true
			s.ws()
			start := s.pos
			if !s.skip(nil) {
				return false
			}
			h, ok := plainInt(s.data[start:s.pos])
			plain = plain && ok
			e.handle = h
		case field >= 0:
			seen[field] = true
			s.ws()
			start := s.pos
			if !s.skip(nil) {
				return false
			}
			v, ok := plainString(s.data[start:s.pos])
			if !ok {
				// Not a plain string: decoding tells.
				plain = false
				break
			}
			switch field {
			case 0:
				e.family = s.intern(v)
			case 1:
				e.table = s.intern(v)
			case 2:
				e.nameStart, e.nameEnd = s.pos-1-len(v), s.pos-1
			}
		default:
			if !s.skip(&e.marks) {
				return false
			}
		}
		if s.expect('}') {
			break
		}
		if !s.expect(',') {
			return false
		}
	}
	e.plain = plain && seen[0] && seen[1] && seen[2]
	return true
}

// setBody reads a set's or map's body, finding its "elem".
func (s *scanner) setBody(e *rawElem) bool {
	if s.peek() != '{' {
		return s.skip(nil)
	}
	s.pos++
	seen := false
	for first := true; ; first = false {
		if first && s.expect('}') {
			return true
		}
		key, esc, ok := s.str()
		if !ok || !s.expect(':') {
			return false
		}
		s.ws()
		start := s.pos
		if !s.skip(nil) {
			return false
		}
		if esc || string(key) == "elem" {
			// An escaped key could spell "elem": the decoder reads them.
			e.elemStart, e.elemEnd = start, s.pos
			if seen || esc {
				e.elemEnd = 0
			}
			seen = true
		}
		if s.expect('}') {
			return true
		}
		if !s.expect(',') {
			return false
		}
	}
}

// plainString is the text of a string token that decodes to its bytes:
// no escapes, no control characters, nothing outside ASCII (the decoder
// replaces invalid UTF-8).
func plainString(tok []byte) ([]byte, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return nil, false
	}
	text := tok[1 : len(tok)-1]
	for _, c := range text {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return nil, false
		}
	}
	return text, true
}

// plainInt reads a number token that is an integer as JSON writes one
// (no leading zero, fraction or exponent).
func plainInt(tok []byte) (int, bool) {
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(tok))
	return n, err == nil
}
