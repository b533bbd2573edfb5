package iptables

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/svctrace/svctrace/snapshot"
)

// A lazy read serves a narrowed analysis (explain of one Service on a node
// with thousands): tables, chain declarations, COMMIT and the chain of every
// rule line are read at once, as in a full read, so that a truncated dump or
// a rule outside a table is still refused; each rule line is parsed when its
// chain is first used (Chain.Rules), which for one Service's walks is a few
// dozen chains of tens of thousands.

// lazyState is what the chains of one lazy read share: how to parse their
// lines, and the notes and the first error of the parses made later.
type lazyState struct {
	src    string
	opts   ParseOptions
	family string
	// text is the dump; the kept lines are substrings of it.
	text string
	// node and dump name the dump in errors, when the loader read it.
	node string
	dump *snapshot.Dump

	mu    sync.Mutex
	notes []Note
	// noted are the lines whose notes are in notes: a line may be parsed
	// twice (by Infer, then for its chain).
	noted map[int]bool
	err   error
	// inOrder is the error of a read of the whole dump in order, which a
	// full read gives in place of err (see Err).
	inOrder error
}

// lazyLine is one rule line kept for later: col is where its command (-A)
// starts, after the counters.
type lazyLine struct {
	text string
	n    int32
	col  int32
}

// lazyChain holds a chain's rule lines until its rules are first used.
type lazyChain struct {
	once      sync.Once
	state     *lazyState
	table     *Table
	tableLine int
	lines     []lazyLine
	// transient is a per-Service chain (perServiceChain): a walk scope
	// (Walker.Scope) parses it for the walks of one frontend and keeps
	// its rules only while they last. parsed tells that its lines were
	// parsed once, in a scope or for good (see Ruleset.checkRest).
	transient bool
	parsed    atomic.Bool
	// run, for a chain read with a digest, is where its lines lie, one
	// after the other: they are found there when first needed (kept).
	run     *lineRun
	runOnce sync.Once
}

// kept are the chain's rule lines.
func (l *lazyChain) kept() []lazyLine {
	if l.run != nil {
		l.runOnce.Do(func() {
			var err error
			if l.lines, err = l.run.split(l.state.src, l.state.text); err != nil {
				l.state.fail(err)
			}
		})
	}
	return l.lines
}

// count is the number of the chain's rule lines, without finding them.
func (l *lazyChain) count() int {
	if l.run != nil {
		return l.run.count
	}
	return len(l.lines)
}

// parseLazy reads an iptables-save dump lazily. A dump that does not say
// its family up front (opts.Family) or has lines outside a *table section
// (iptables -S output) is read in full: its family or tables are inferred
// from the rules themselves.
func parseLazy(source, text string, opts ParseOptions) (*Ruleset, error) {
	p, err := newDumpParser(source, opts)
	if err != nil {
		return nil, err
	}
	if p.family == "" || !startsWithTable(text) {
		return p.parse(text)
	}
	p.lazy = &lazyState{src: source, opts: opts, family: p.family, text: text}
	rs, err := p.parse(text)
	if err != nil {
		return nil, err
	}
	rs.lazy = []*lazyState{p.lazy}
	return rs, nil
}

// startsWithTable reports whether the first line that is not blank or a
// comment is a *table header.
func startsWithTable(text string) bool {
	for text != "" {
		line, rest, _ := strings.Cut(text, "\n")
		line = strings.TrimLeft(line, " \t")
		switch {
		case line == "" || line == "\r" || line[0] == '#':
			text = rest
			continue
		case line[0] == '*':
			return true
		}
		return false
	}
	return false
}

// deferRule files an -A line of the table being read under its chain. Any
// other command is handled as in a full read.
func (p *dumpParser) deferRule(line string, i, n int) error {
	var name string
	switch {
	case strings.HasPrefix(line[i:], "-A "):
		name = plainWord(line, i+len("-A "))
	case strings.HasPrefix(line[i:], "--append "):
		name = plainWord(line, i+len("--append "))
	default:
		return p.command(line, i, n)
	}
	if name == "" {
		// A quoted or malformed chain name: tokenized, with the errors
		// of a full read.
		toks, err := p.tokenize(line, i, n)
		if err != nil {
			return err
		}
		if len(toks) < 2 {
			return p.errAt(line, n, len(line), "%s needs a chain name", toks[0].text)
		}
		if msg := lexChainName(toks[1]); msg != "" {
			return p.errAt(line, n, toks[1].col, "%s after %s", msg, toks[0].text)
		}
		name = toks[1].text
	}
	c := p.chain(p.table, name)
	if c.Len() == 0 && c.Line == 0 && !c.Builtin {
		p.note(n, "chain %s in table %s has rules but no declaration (:%s); created", name, p.table.Name, name)
	}
	if c.lazy == nil {
		c.lazy = p.lazySlab.alloc()
		c.lazy.state, c.lazy.table, c.lazy.tableLine = p.lazy, p.table, p.tableLine
		c.lazy.transient = perServiceChain(name)
	}
	p.appendLine(c.lazy, lazyLine{text: line, n: int32(n), col: int32(i)})
	return nil
}

// appendLine appends ln to l.lines (see runs).
func (p *dumpParser) appendLine(l *lazyChain, ln lazyLine) {
	l.lines = p.lazyLines.append(l, l.lines, ln)
}

// plainWord is the word at line[i:] when it is a plain chain name (no
// quotes, not an option), else "".
func plainWord(line string, i int) string {
	i = lexSkipBlank(line, i)
	j := i
	for j < len(line) && line[j] != ' ' && line[j] != '\t' {
		switch line[j] {
		case '"', '\'', '\\':
			return ""
		}
		j++
	}
	if w := line[i:j]; w != "" && w[0] != '-' && w[0] != '!' {
		return w
	}
	return ""
}

// parser is a parser of this read's rule lines of table t, for one
// goroutine.
func (st *lazyState) parser(t *Table, tableLine int) *dumpParser {
	return &dumpParser{
		src: st.src, opts: st.opts, rs: &Ruleset{Source: st.src},
		family: st.family, familyB: familyGiven,
		table: t, tableLine: tableLine,
	}
}

// ruleOf parses one kept line as a full read does, jump check included.
func (p *dumpParser) ruleOf(ln lazyLine, chain string) (*Rule, error) {
	line, n := ln.text, int(ln.n)
	toks, err := p.tokenize(line, int(ln.col), n)
	if err != nil {
		return nil, err
	}
	if len(toks) < 2 || (toks[0].text != "-A" && toks[0].text != "--append") || toks[1].text != chain {
		// Only a damaged digest (digest.go) files a line so.
		return nil, p.errAt(line, n, int(ln.col), "this line was filed as a rule of chain %s, which it is not (a damaged index?)", chain)
	}
	r := p.rules.alloc()
	r.Line, r.Raw = n, line
	if err := p.parseRule(r, line, n, toks[2:]); err != nil {
		return nil, err
	}
	r.Table, r.Chain = p.table.Name, chain
	if jumpsToChain(r) {
		if err := p.checkJump(r, p.targetCol); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// parse parses the chain's kept lines into c's rules.
func (l *lazyChain) parse(c *Chain) {
	p := l.state.parser(l.table, l.tableLine)
	l.parseWith(p, c)
	l.state.addNotes(p.rs.Notes)
}

// parseWith parses the chain's kept lines with p, which keeps their notes.
func (l *lazyChain) parseWith(p *dumpParser, c *Chain) {
	l.parsed.Store(true)
	for _, ln := range l.kept() {
		r, err := p.ruleOf(ln, c.Name)
		if err != nil {
			l.state.fail(err)
			break
		}
		p.appendRule(c, r)
	}
}

// rulesFor parses the chain's kept lines with p into rules of their own,
// not the chain's: a walk scope's copy (see walkScope).
func (l *lazyChain) rulesFor(p *dumpParser, c *Chain) []*Rule {
	l.parsed.Store(true)
	lines := l.kept()
	out := p.lists.take(len(lines))[:0]
	for _, ln := range lines {
		r, err := p.ruleOf(ln, c.Name)
		if err != nil {
			l.state.fail(err)
			break
		}
		out = append(out, r)
	}
	return out
}

// perServiceChain tells the chains kube-proxy writes for one Service (or
// one of its endpoints): each is read by the walks of that Service's
// frontends alone, so a walk scope parses them and lets them go after.
func perServiceChain(name string) bool {
	for _, p := range []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-SVL-", "KUBE-FW-", "KUBE-XLB-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// parseAll parses chains, which have not been used yet, with one parser
// per table (a parser per chain costs more than the chain's few rules):
// what Rules does for each, for a caller that needs them all.
func parseAll(chains []*Chain) {
	var rp reparser
	defer rp.flush()
	for _, c := range chains {
		l := c.lazy
		l.once.Do(func() { l.parseWith(rp.parser(l), c) })
	}
}

func (st *lazyState) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil {
		st.err = err
	}
}

// addNotes keeps the notes of lines parsed late, each line's once (a
// parse gives all of a line's notes together).
func (st *lazyState) addNotes(notes []Note) {
	if len(notes) == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.noted == nil {
		st.noted = map[int]bool{}
	}
	fresh := map[int]bool{}
	for _, n := range notes {
		if !st.noted[n.Line] || fresh[n.Line] {
			fresh[n.Line] = true
			st.notes = append(st.notes, n)
		}
	}
	for line := range fresh {
		st.noted[line] = true
	}
}

// Err is the first error found in a rule line parsed after a lazy read
// (nil: none, or the ruleset was read in full). For a full read whose
// per-Service chains were left to the walks, it is the error a read in
// order gives: the dump's first.
func (rs *Ruleset) Err() error {
	rs.checkRest()
	for _, st := range rs.lazy {
		st.mu.Lock()
		err := st.err
		if err != nil && rs.rest != nil {
			if st.inOrder == nil {
				_, st.inOrder = ParseString(st.src, st.text, st.opts)
			}
			if st.inOrder != nil {
				err = st.inOrder
			}
		}
		st.mu.Unlock()
		switch {
		case err == nil:
		case st.dump != nil:
			return dumpError(st.node, st.dump, err)
		default:
			return err
		}
	}
	return nil
}

// AllNotes are the ruleset's notes and, for a lazy read, those of the
// lines parsed since, by line.
func (rs *Ruleset) AllNotes() []Note {
	rs.checkRest()
	var late []Note
	for _, st := range rs.lazy {
		st.mu.Lock()
		late = append(late, st.notes...)
		st.mu.Unlock()
	}
	if len(late) == 0 {
		return rs.Notes
	}
	if rs.rest != nil {
		// A full read: its notes are the lines', in order.
		return byLine(late, rs.Notes)
	}
	slices.SortStableFunc(late, func(a, b Note) int { return a.Line - b.Line })
	return append(slices.Clip(rs.Notes), late...)
}

// checkRest parses, once, the per-Service chains of a full read that no
// walk parsed (a chain nothing jumps to), keeping none of their rules: a
// full read answers for every line of its dump, its errors and notes.
func (rs *Ruleset) checkRest() {
	if rs.rest == nil {
		return
	}
	rs.restOnce.Do(func() {
		var rp reparser
		defer rp.flush()
		var clean map[uint64]bool
		if c := rs.clean.Load(); c != nil {
			clean = *c
		}
		for _, c := range rs.rest {
			if l := c.lazy; !l.parsed.Load() && !clean[partID(l.table.Name, c.Name)] {
				l.rulesFor(rp.parser(l), c)
			}
		}
	})
}

// cleanLate says, once every line is accounted for (checkRest), that no
// line parsed late gave a note or an error.
func (rs *Ruleset) cleanLate() bool {
	rs.checkRest()
	for _, st := range rs.lazy {
		st.mu.Lock()
		bad := len(st.notes) > 0 || st.err != nil
		st.mu.Unlock()
		if bad {
			return false
		}
	}
	return true
}

// reparser parses kept lines outside their chain's first use (a check
// that reads every chain), with one parser for all the chains of a table.
type reparser struct {
	p     *dumpParser
	state *lazyState
}

func (rp *reparser) parser(l *lazyChain) *dumpParser {
	if rp.p == nil || rp.state != l.state || rp.p.table != l.table {
		rp.flush()
		rp.p, rp.state = l.state.parser(l.table, l.tableLine), l.state
	}
	return rp.p
}

// flush hands the notes of the lines parsed so far to their read.
func (rp *reparser) flush() {
	if rp.p != nil {
		rp.state.addNotes(rp.p.rs.Notes)
		rp.p.rs.Notes = nil
	}
}

// targets calls f with the target of each of the chain's rules ("" for
// none). A lazily read chain's lines are not parsed for it where the
// target can be read off the line for certain.
func (c *Chain) targets(rp *reparser, f func(string)) {
	l := c.lazy
	if l == nil {
		for _, r := range c.rules {
			f(r.Target)
		}
		return
	}
	for _, ln := range l.kept() {
		if t, ok := plainTarget(ln.text[ln.col:]); ok {
			f(t)
			continue
		}
		r, err := rp.parser(l).ruleOf(ln, c.Name)
		if err != nil {
			l.state.fail(err)
			continue
		}
		f(r.Target)
	}
}

// plainTarget reads the target off a rule line (from its -A) when that is
// certain: the word after the last " -j " or " -g ", with no quote, escape
// or tab after it; or "" for a line with no quote, tab, -j, -g, --jump or
// --goto at all.
func plainTarget(line string) (string, bool) {
	for i := len(line) - 4; i >= 0; i-- {
		switch line[i+3] {
		case '"', '\\', '\'', '\t':
			return "", false
		case ' ':
			if line[i] != ' ' || line[i+1] != '-' || (line[i+2] != 'j' && line[i+2] != 'g') {
				continue
			}
			name, _, _ := strings.Cut(line[i+4:], " ")
			if name == "" || name[0] == '-' || name[0] == '!' {
				return "", false
			}
			return name, true
		}
	}
	if strings.Contains(line, "--jump") || strings.Contains(line, "--goto") || strings.ContainsAny(line[:min(3, len(line))], "\t\"'") {
		return "", false
	}
	return "", true
}

// rulesMentioning are the chain's rules whose line passes pred, a
// necessary condition for what the caller looks for: a lazily read chain
// parses only those lines for it (and keeps none of them).
func (c *Chain) rulesMentioning(rp *reparser, pred func(line string) bool) []*Rule {
	l := c.lazy
	if l == nil {
		return c.rules
	}
	var out []*Rule
	for _, ln := range l.kept() {
		if !pred(ln.text) {
			continue
		}
		r, err := rp.parser(l).ruleOf(ln, c.Name)
		if err != nil {
			l.state.fail(err)
			continue
		}
		out = append(out, r)
	}
	return out
}
