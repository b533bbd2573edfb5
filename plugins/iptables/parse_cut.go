package iptables

import "fmt"

// The two ways a pasted dump is cut from a whole iptables-save: its end
// (a table without its COMMIT, read only when the caller says the input
// is an excerpt) and its start (rules before the first *table line that a
// COMMIT closes: the tail of a table whose header was left out).

// cutTable ends the table being read where the input ends: its jumps to
// chains it declares are kept, the others end the walk as chains the
// excerpt lacks, and the Ruleset is an excerpt.
func (p *dumpParser) cutTable() {
	for _, j := range p.jumps {
		if c := p.table.Chain(j.rule.Target); c != nil {
			j.rule.jump = c
		}
	}
	p.jumps = p.jumps[:0]
	why := fmt.Sprintf("table %s (line %d) is cut after line %d, before its COMMIT", p.table.Name, p.tableLine, p.lastLine)
	p.markExcerpt(why)
	p.note(p.lastLine, "%s: read as the excerpt it was given as; what it does not show is not known", why)
	p.table, p.lastChain = nil, nil
}

// headlessCommit closes the rules read before any *table line: the input
// starts inside a table, whose name is inferred as for headerless rules.
func (p *dumpParser) headlessCommit(n int) {
	p.placePending()
	p.pending = p.pending[:0]
	p.note(n, "the input starts inside a table: the rules before the COMMIT on line %d have no *table line, so they are the tail of a table cut off above", n)
}

// markExcerpt records why the rules are an excerpt, keeping the first
// reason given.
func (p *dumpParser) markExcerpt(why string) {
	if p.rs.Excerpt == "" {
		p.rs.Excerpt = why
	}
}
