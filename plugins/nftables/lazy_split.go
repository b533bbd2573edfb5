package nftables

import (
	"bytes"
	"runtime"
)

// A large document is split in two at an element of its top-level array,
// and the halves are scanned at once. Where the second half starts is a
// guess (the text of a rule's start, found past the middle), proven by
// the first half: its scan, which follows every string and bracket from
// the document's start, must reach an element starting exactly there.
// When it does not, the first half's scan goes on to the end and the
// second half's result is dropped, so the elements are always those of
// one scan from the start.

// minSplit is the size of a document worth scanning in two parts.
const minSplit = 1 << 20

// ruleStart is how nft (and this package's writer) starts a rule element
// after the one before it.
var ruleStart = []byte(`, {"rule": {`)

// splitPoint is where the second half of the array that starts at from
// may start: after the comma before a rule element past the middle of
// data (where one scan's element would start); -1 when the document is
// small, there is one CPU, or no such text is found.
func splitPoint(data []byte, from int) int {
	if len(data) < minSplit || runtime.GOMAXPROCS(0) < 2 {
		return -1
	}
	mid := from + (len(data)-from)/2
	i := bytes.Index(data[mid:], ruleStart)
	if i < 0 {
		return -1
	}
	return mid + i + len(",")
}

// splitArray reads the array's elements (elems holds none yet), those
// from split on in another goroutine.
func (s *scanner) splitArray(elems []rawElem, split int) ([]rawElem, bool) {
	second := &scanner{data: s.data, pos: split}
	room := cap(elems)/2 + 16
	var (
		tail   []rawElem
		tailOK bool
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		tail, tailOK, _ = second.elements(make([]rawElem, 0, room), -1)
	}()
	elems, ok, landed := s.elements(elems, split)
	<-done
	switch {
	case !ok:
		return nil, false
	case !landed:
		// The guess was not an element of this array: the first scan
		// read all of it.
		return elems, true
	case !tailOK:
		// An element from split on is one the scan cannot read: a scan
		// from the start finds the same.
		return nil, false
	}
	s.pos = second.pos
	return append(elems, tail...), true
}
