package iptables

import "github.com/svctrace/svctrace/dataplane"

var _ dataplane.ScopedWalker = (*Walker)(nil)

// Scope implements dataplane.ScopedWalker: the walks of the walker it
// returns parse each per-Service chain of a lazy read (perServiceChain)
// once, and keep its rules until the returned function ends the scope.
// A full read of a node keeps the rules of its shared chains only: the
// rules of ten thousand Services would be most of an analysis's memory.
func (w *Walker) Scope() (dataplane.Walker, func()) {
	sc := &walkScope{w: w}
	if rp, ok := w.parsers.Get().(*reparser); ok {
		sc.rp = rp
	} else {
		sc.rp = &reparser{}
	}
	return scopedWalker{w: w, sc: sc}, sc.end
}

// walkScope is what the walks of one Service's frontends parsed: a
// goroutine's own.
type walkScope struct {
	w *Walker
	// rp parses; it goes from scope to scope (its arrays of rules and
	// options are handed out across them: a chain's few rules do not
	// make arrays of their own).
	rp     *reparser
	parsed map[*Chain][]*Rule
}

// rules are the chain's rules, parsed on first use in the scope.
func (sc *walkScope) rules(c *Chain) []*Rule {
	if r, ok := sc.parsed[c]; ok {
		return r
	}
	l := c.lazy
	r := l.rulesFor(sc.rp.parser(l), c)
	if sc.parsed == nil {
		sc.parsed = map[*Chain][]*Rule{}
	}
	sc.parsed[c] = r
	return r
}

// end hands the notes of the lines parsed to their read, and lets the
// rules go.
func (sc *walkScope) end() {
	sc.rp.flush()
	sc.w.parsers.Put(sc.rp)
	sc.rp, sc.parsed = nil, nil
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
