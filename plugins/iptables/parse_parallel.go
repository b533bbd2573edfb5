package iptables

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// parallelMin is the size of a dump from which Load parses its chains on
// every CPU; below it, one read in order is as fast.
const parallelMin = 1 << 20

// parseParallel is ParseString on every CPU for a text of from bytes or
// more: a lazy read files each rule line under its chain, then the chains
// shared by the Services are parsed at once, and each Service's own chains
// (perServiceChain) are left to the walks that enter them (Walker.Scope).
// Once its Err or AllNotes is asked, it gives what ParseString gives: the
// same rules, the same error, the same notes in the same order (a full
// read's notes come in the order of the lines; on one line, a rule's own
// before the note on its undeclared chain). A dump the lazy read refuses,
// or with a fault in a shared chain, is read again in order at once, so
// that the error is the first of the dump, as ParseString says it.
func parseParallel(source, text string, opts ParseOptions, from int) (*Ruleset, error) {
	if len(text) < from {
		return ParseString(source, text, opts)
	}
	rs, err := parseLazy(source, text, opts)
	if err != nil {
		return ParseString(source, text, opts)
	}
	if len(rs.lazy) == 0 {
		return rs, nil // read in full already
	}
	// Each Service's chains are left to the walks of its frontends, which
	// parse them in a scope of their own (Walker.Scope) and let them go:
	// kept, they would be most of the memory of a large node's analysis.
	var chains, later []*Chain
	for _, name := range rs.TableOrder {
		for _, c := range rs.Tables[name].chains() {
			switch {
			case c.lazy == nil:
			case c.lazy.transient:
				later = append(later, c)
			default:
				chains = append(chains, c)
			}
		}
	}
	// Batches of chains, each parsed with one parser.
	const batch = 1024
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (len(chains)+batch-1)/batch) {
		wg.Go(func() {
			for i := int(next.Add(batch)) - batch; i < len(chains); i = int(next.Add(batch)) - batch {
				parseAll(chains[i:min(i+batch, len(chains))])
			}
		})
	}
	wg.Wait()
	if rs.Err() != nil {
		return ParseString(source, text, opts)
	}
	var late []Note
	for _, st := range rs.lazy {
		late = append(late, st.notes...)
		st.notes = nil
	}
	rs.Notes = byLine(late, rs.Notes)
	for _, c := range chains {
		c.lazy = nil // parsed: the lines are not needed any more
	}
	if len(later) == 0 {
		rs.lazy = nil
	} else {
		// Whatever no walk parses is parsed before the read's error or
		// notes are told (checkRest), as a full read would have.
		rs.rest = later
	}
	return rs, nil
}

// byLine merges the notes of lines parsed late with a read's own, by line:
// on one line, a rule's own notes come before the read's note on its
// undeclared chain, as a read in order gives them.
func byLine(late, own []Note) []Note {
	if len(late) == 0 {
		return own
	}
	notes := append(slices.Clip(late), own...)
	slices.SortStableFunc(notes, func(a, b Note) int { return a.Line - b.Line })
	return notes
}
