package iptables

import (
	"slices"

	"github.com/svctrace/svctrace/dataplane"
)

var _ dataplane.ScopedWalker = (*Walker)(nil)

// Scope implements dataplane.ScopedWalker: the walks of the walker it
// returns parse each per-Service chain of a lazy read (perServiceChain)
// once, and keep its rules until the returned function ends the scope.
// A full read of a node keeps the rules of its shared chains only: the
// rules of ten thousand Services would be most of an analysis's memory.
func (w *Walker) Scope() (dataplane.Walker, func()) {
	sc := w.scopes.Get()
	if sc.w == nil {
		*sc = walkScope{w: w, rp: &reparser{}, parsed: map[*Chain][]*Rule{}}
	}
	return scopedWalker{w: w, sc: sc}, sc.end
}

// walkScope is what the walks of one Service's frontends parsed: a
// goroutine's own. A scope ended is the walker's next (see end).
type walkScope struct {
	w *Walker
	// rp parses, into the same memory scope after scope (see end).
	rp     *reparser
	parsed map[*Chain][]*Rule
	// others are the parts of another plane's state the walks read
	// (Extensions.LocalInPart), each once.
	others []uint64
}

// read keeps a part of another plane's state the walks read.
func (sc *walkScope) read(id uint64) {
	if !slices.Contains(sc.others, id) {
		sc.others = append(sc.others, id)
	}
}

// rules are the chain's rules, parsed on first use in the scope.
func (sc *walkScope) rules(c *Chain) []*Rule {
	if r, ok := sc.parsed[c]; ok {
		return r
	}
	l := c.lazy
	r := l.rulesFor(sc.rp.parser(l), c)
	sc.parsed[c] = r
	return r
}

// end hands the notes of the lines parsed to their read, and lets the
// rules go: the scope's parser parses the next scope's into the same
// memory. No rule of a scope is kept past it: walks copy out what their
// branches say (hops hold a rule's text, not the rule).
func (sc *walkScope) end() {
	sc.rp.flush()
	if sc.rp.p != nil {
		sc.rp.p.rewind()
	}
	clear(sc.parsed)
	sc.others = sc.others[:0]
	sc.w.scopes.Put(sc)
}

// scopedWalker is a Walker's walks in one scope.
type scopedWalker struct {
	w  *Walker
	sc *walkScope
}

func (s scopedWalker) Walk(p Packet) []dataplane.Branch {
	return s.w.walkWith(p, dataplane.WalkOptions{}, s.sc)
}

func (s scopedWalker) WalkWith(p Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return s.w.walkWith(p, o, s.sc)
}

func (s scopedWalker) AppendWalk(out []dataplane.Branch, p Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return s.w.appendWalk(out, p, o, s.sc)
}
