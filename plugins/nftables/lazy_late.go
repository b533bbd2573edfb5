package nftables

import "fmt"

// A narrow read takes a big set's elements (kube-proxy's cluster IPs and
// Service ports, one per Service) off its text in a goroutine of its own,
// while the scan of the document goes on; the set is finished once the
// scan has read every element, in the order the sets came. The goroutine
// also checks the elements with the set's types and indexes them.

// minLateElems is the size of an "elem" text read in a goroutine.
const minLateElems = 64 << 10

// lateElems are the elements of one set, being read.
type lateElems struct {
	doc *lazyDoc
	// raw is the set's "elem" text, at start in the document.
	raw   []byte
	start int
	isMap bool
	// set, its table and its path: the set read without elements, given
	// to the goroutine through made (nil: the set was not made).
	set   *Set
	table *Table
	path  string
	made  chan *Set

	done chan struct{}
	// ok: the goroutine read the elements, gave them to the set and
	// indexed them, or found err in them.
	ok  bool
	err error
}

// readLate starts reading the elements of e, a set or map; made must then
// be given the set (see made).
func readLate(doc *lazyDoc, e *rawElem) *lateElems {
	l := &lateElems{doc: doc, raw: doc.data[e.elemStart:e.elemEnd], start: e.elemStart, isMap: e.kind == "map",
		made: make(chan *Set, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		elems, ok := plainElems(l.raw, l.isMap)
		s := <-l.made
		if !ok || s == nil {
			return
		}
		s.Elements, l.ok = elems, true
		if l.err = checkElements(s, l.path); l.err == nil {
			s.buildIndex()
		}
	}()
	return l
}

// madeAs tells the goroutine which set the elements are of: s, in table t
// at path (s nil: the set was not made, the scan stops at its error).
func (l *lateElems) madeAs(s *Set, t *Table, path string) {
	l.set, l.table, l.path = s, t, path
	l.made <- s
}

// finish waits for the set's elements; those plainElems cannot read go
// through the decoder, as in Parse, and are checked with the set's types.
func (l *lateElems) finish(p *parser) error {
	<-l.done
	if l.set == nil {
		return nil
	}
	err := l.err
	if !l.ok {
		var v any
		if v, err = decodeRaw(l.raw); err != nil {
			return jsonErrorAt(l.doc.source, l.doc.data, int64(l.start), err)
		}
		if l.set.Elements, err = p.setElements(v, l.path, l.isMap, l.table.Family); err != nil {
			return fmt.Errorf("nftables: %s: %w", l.doc.source, err)
		}
		err = checkElements(l.set, l.path)
	}
	if err != nil {
		return fmt.Errorf("nftables: %s: table %s: %w", l.doc.source, l.table.ID(), err)
	}
	return nil
}
