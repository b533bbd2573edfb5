package iptables

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// A narrowed analysis (explain, a recheck) walks a few packets through a
// lazily read dump, and the long shared chains are most of what it would
// parse: KUBE-SERVICES holds a rule per frontend of every Service. Such a
// chain is indexed by destination off its lines' text instead, and only
// the lines a packet can match are parsed (lazyIndex), as a chain's index
// (chainIndex) picks the candidates of a parsed one.

// lazyIndexed reports whether a walk takes the chain's candidates from
// its lazy index rather than parsing it whole: a long chain of a lazy read
// whose rules no one has parsed yet.
func (c *Chain) lazyIndexed() bool {
	l := c.lazy
	return l != nil && !l.transient && !l.parsed.Load() && l.count() >= minIndexed
}

// minIndexed is the shortest chain indexed by destination: a scan of a
// shorter one is as fast.
const minIndexed = 32

// lazyCandidates are the rules of a lazyIndexed chain that a packet to dst
// can match, in order: those whose destination is dst, and those whose
// destination the text does not make certain.
func (c *Chain) lazyCandidates(dst netip.Addr) []*Rule {
	w := c.work()
	w.lidxOnce.Do(func() { w.lidx = newLazyIndex(c) })
	return w.lidx.rulesFor(c, dst)
}

// lazyRuleAt is the rule of a lazyIndexed chain at that line, when a walk
// parsed it (a hop's rule, which the walk took from the index).
func (c *Chain) lazyRuleAt(line int) (*Rule, bool) {
	if !c.lazyIndexed() {
		return nil, false
	}
	w := c.work()
	w.lidxOnce.Do(func() { w.lidx = newLazyIndex(c) })
	x := w.lidx
	i, ok := slices.BinarySearchFunc(x.lines, line, func(l lazyLine, n int) int { return cmp.Compare(int(l.n), n) })
	if !ok {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rules[i], x.rules[i] != nil
}

// lazyIndex is a lazily read chain's lines by destination, and the rules
// of those parsed so far.
type lazyIndex struct {
	dstIndex
	lines []lazyLine

	mu sync.Mutex
	// rules are the lines' rules, nil until parsed; p parses them, and
	// noted counts its notes already handed to the read.
	rules []*Rule
	p     *dumpParser
	noted int
	// failed is set once a line failed to parse (the read keeps the
	// error): no rule after it is a candidate, as a walk of the chain
	// parsed whole stops at it.
	failed int
}

func newLazyIndex(c *Chain) *lazyIndex {
	l := c.lazy
	x := &lazyIndex{lines: l.kept(), failed: -1}
	x.rules = make([]*Rule, len(x.lines))
	for i, ln := range x.lines {
		a, ok := lineDest(ln.text, int(ln.col), l.state.family)
		x.add(i, a, ok)
	}
	return x
}

// rulesFor parses the lines dst needs that are not parsed yet, and
// returns their rules in order.
func (x *lazyIndex) rulesFor(c *Chain, dst netip.Addr) []*Rule {
	cur := x.candidates(dst)
	out := make([]*Rule, 0, cur.len())
	x.mu.Lock()
	defer x.mu.Unlock()
	l := c.lazy
	for i, ok := cur.next(); ok; i, ok = cur.next() {
		if x.failed >= 0 && i >= x.failed {
			break
		}
		if x.rules[i] == nil {
			if x.p == nil {
				x.p = l.state.parser(l.table, l.tableLine)
			}
			r, err := x.p.ruleOf(x.lines[i], c.Name)
			if err != nil {
				l.state.fail(err)
				x.failed = i
				break
			}
			x.rules[i] = r
		}
		out = append(out, x.rules[i])
	}
	if x.p != nil && len(x.p.rs.Notes) > x.noted {
		l.state.addNotes(x.p.rs.Notes[x.noted:])
		x.noted = len(x.p.rs.Notes)
	}
	return out
}

// lineDest is the destination of an -A line (its command at col) when its
// text makes it certain: a -d of one address of the family, not negated,
// before the line's first match or target, with no quote up to there.
// Anything else (no -d there, a negation, a prefix, a quote, an address of
// the other family) is not certain, and the line is a candidate for every
// packet.
func lineDest(line string, col int, family string) (netip.Addr, bool) {
	var prev string
	for i, n := col, 0; ; n++ {
		w, next := lineWord(line, i)
		if w == "" || strings.IndexByte(w, '"') >= 0 {
			return netip.Addr{}, false
		}
		i = next
		if n < 2 { // -A CHAIN
			prev = w
			continue
		}
		switch w {
		case "-m", "--match", "-j", "--jump", "-g", "--goto":
			return netip.Addr{}, false
		case "-d", "--destination", "--dst":
			arg, _ := lineWord(line, i)
			if prev == "!" || arg == "" || strings.IndexByte(arg, '"') >= 0 {
				return netip.Addr{}, false
			}
			p, err := parseAddrArg(arg)
			if err != nil || !p.IsSingleIP() || p.Addr().Is4() != (family == famIPv4) {
				return netip.Addr{}, false
			}
			return p.Addr(), true
		}
		prev = w
	}
}

// lineWord is the word of line at or after i, split as the tokenizer
// splits bare words (on blanks), and where the next one may start; ""
// at the end of the line.
func lineWord(line string, i int) (string, int) {
	i = lexSkipBlank(line, i)
	j := i
	for j < len(line) && line[j] != ' ' && line[j] != '\t' {
		j++
	}
	return line[i:j], j
}
