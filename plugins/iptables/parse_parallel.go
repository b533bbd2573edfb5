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
// more: a lazy read files each rule
// line under its chain, then the chains are parsed at once. It gives what
// ParseString gives: the same rules, the same notes in the same order (a
// full read's notes come in the order of the lines; on one line, a rule's
// own before the note on its undeclared chain). A dump the lazy read
// refuses, or with a fault in a rule, is read again in order, so that the
// error is the first of the dump, as ParseString says it.
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
	var chains []*Chain
	for _, name := range rs.TableOrder {
		for _, c := range rs.Tables[name].chains() {
			if c.lazy != nil {
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
	}
	notes := append(late, rs.Notes...)
	slices.SortStableFunc(notes, func(a, b Note) int { return a.Line - b.Line })
	rs.Notes, rs.lazy = notes, nil
	for _, c := range chains {
		c.lazy = nil // parsed: the lines are not needed any more
	}
	return rs, nil
}
