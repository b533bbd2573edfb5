package iptables

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ParseOptions tune Parse for input that does not describe itself.
type ParseOptions struct {
	// Table, when set, is the table for headerless input (iptables -S
	// lines with no *table header). When empty the table is inferred from
	// chain names and targets, and a Note says so.
	Table string
	// Family is "IPv4" or "IPv6". When empty it comes from the
	// ip6tables-save / iptables-save header, else from the first address
	// in a rule, else IPv4.
	Family string
	// Excerpt: the caller says the input is an excerpt someone cut, so a
	// table without its COMMIT ends where the input ends (and the
	// Ruleset is an excerpt) instead of being refused as truncated.
	Excerpt bool
}

// Parse reads an iptables-save / ip6tables-save dump (optionally with
// counters, -c) or headerless iptables -S output and returns its rules.
// Syntax errors, including a truncated dump, are returned as *ParseError.
// source names the input in the Ruleset and in errors.
func Parse(source string, r io.Reader, opts ParseOptions) (*Ruleset, error) {
	if r == nil {
		return nil, errors.New("iptables: Parse: nil reader")
	}
	text, err := readInput(r)
	if err != nil {
		return nil, fmt.Errorf("iptables: reading %s: %w", parseSourceName(source), err)
	}
	return ParseString(source, text, opts)
}

// ParseString is Parse for input already in memory. Rule.Raw and the
// parsed tokens share text's memory.
func ParseString(source, text string, opts ParseOptions) (*Ruleset, error) {
	p, err := newDumpParser(source, opts)
	if err != nil {
		return nil, err
	}
	return p.parse(text)
}

func newDumpParser(source string, opts ParseOptions) (*dumpParser, error) {
	family, err := parseFamilyOption(opts.Family)
	if err != nil {
		return nil, err
	}
	p := &dumpParser{
		src:  source,
		opts: opts,
		rs: &Ruleset{
			Source: source,
			Tables: make(map[string]*Table),
		},
		family: family,
		tables: make(map[string]int),
	}
	if family != "" {
		p.familyB = familyGiven
	}
	return p, nil
}

func (p *dumpParser) parse(text string) (*Ruleset, error) {
	if isListing(text) {
		return p.parseListing(text) // iptables -L output: listing.go
	}
	if err := p.run(text); err != nil {
		return nil, err
	}
	p.rs.Family = p.family
	if p.rs.Family == "" {
		p.rs.Family = famIPv4
	}
	return p.rs, nil
}

const (
	famIPv4 = "IPv4"
	famIPv6 = "IPv6"
	// familyGiven is familyB when the family is the caller's
	// (ParseOptions.Family: the dump was given as one family).
	familyGiven = "the family the dump was given as"
)

// wrongFamilyHint says what to do with a dump given as fam whose text
// (a header, an address) is of the other family.
func wrongFamilyHint(fam string) string {
	if fam == famIPv4 {
		return "was it taken with ip6tables-save? give it as the IPv6 dump"
	}
	return "was it taken with iptables-save? give it as the IPv4 dump"
}

func parseFamilyOption(f string) (string, error) {
	switch strings.ToLower(f) {
	case "":
		return "", nil
	case "ipv4", "inet", "4", "ip":
		return famIPv4, nil
	case "ipv6", "inet6", "6", "ip6":
		return famIPv6, nil
	}
	return "", fmt.Errorf("iptables: unknown family %q (want IPv4 or IPv6)", f)
}

func parseSourceName(s string) string {
	if s == "" {
		return "<input>"
	}
	return s
}

// readInput reads the whole input into one string, so that every line and
// token is a substring of it and parsing allocates no per-line strings.
func readInput(r io.Reader) (string, error) {
	var b strings.Builder
	switch v := r.(type) {
	case interface{ Len() int }:
		b.Grow(v.Len())
	case *os.File:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() && st.Size() < 1<<31 {
			b.Grow(int(st.Size()))
		}
	}
	_, err := io.Copy(&b, r)
	return b.String(), err
}

// dumpParser holds the state of one Parse call.
type dumpParser struct {
	src  string
	opts ParseOptions
	rs   *Ruleset
	// lazy, when set, is a lazy read: the rule lines of a table are
	// filed under their chain, to be parsed when the chain is used.
	lazy      *lazyState
	lazySlab  parseSlab[lazyChain]
	lazyLines runs[lazyLine]

	// family is decided by the option, a header or the first address;
	// familyB says by what (for error messages).
	family  string
	familyB string

	// table is the table between *name and COMMIT, nil outside one.
	table     *Table
	tableLine int
	tables    map[string]int // table name -> line of its header
	lastChain *Chain         // cache: rules come grouped by chain
	lastTable *Table         // the table of lastChain

	// pending holds headerless lines until the table can be inferred.
	pending []pendingLine
	// jumps are the rules of the table being read that jump to a chain;
	// targetCol is where the last rule's target name starts.
	jumps     []pendingJump
	targetCol int

	lastLine int
	lastText string
	// text is the input, pos the offset of the line being read.
	text string
	pos  int

	toks     []lexToken
	sArgs    []string
	sOpts    []scratchOption
	sMatches []scratchMatch

	// ptrs holds the rules of chains, lazyLines (above) their kept lines.
	ptrs runs[*Rule]

	chainSlab parseSlab[Chain]
	rules     parseSlab[Rule]
	addrs     parseSlab[AddrMatch]
	ifaces    parseSlab[IfaceMatch]
	protos    parseSlab[ProtoMatch]
	bools     parseSlab[bool]
	strs      parseSlab[string]
	options   parseSlab[Option]
	matches   parseSlab[Match]
	facts     parseSlab[ruleFacts]
	// lists holds the rule lists of chains parsed for a walk scope.
	lists parseSlab[*Rule]
}

// rewind hands out the memory of every rule parsed so far again (see
// parseSlab.rewind): for a walk scope's parser, whose rules are let go at
// the scope's end.
func (p *dumpParser) rewind() {
	p.rules.rewind()
	p.addrs.rewind()
	p.ifaces.rewind()
	p.protos.rewind()
	p.bools.rewind()
	p.strs.rewind()
	p.options.rewind()
	p.matches.rewind()
	p.facts.rewind()
	p.lists.rewind()
}

func (p *dumpParser) run(text string) error {
	n := 0
	p.text = text
	for pos := 0; pos < len(text); {
		p.pos = pos
		var line string
		if i := strings.IndexByte(text[pos:], '\n'); i >= 0 {
			line = text[pos : pos+i]
			pos += i + 1
		} else {
			line = text[pos:]
			pos = len(text)
		}
		n++
		if l := len(line); l > 0 && line[l-1] == '\r' {
			line = line[:l-1]
		}
		if err := p.line(line, n); err != nil {
			return err
		}
		p.lastLine, p.lastText = n, line
	}
	if p.table != nil && !p.opts.Excerpt {
		return &ParseError{
			Source: p.src, Line: p.lastLine, Column: len(p.lastText) + 1, Text: p.lastText,
			Msg: fmt.Sprintf("unexpected end of input: table %s (line %d) has no COMMIT; the dump is truncated "+
				"(if it was cut on purpose, give it as an excerpt: --excerpt)", p.table.Name, p.tableLine),
		}
	}
	if p.table != nil {
		p.cutTable()
	}
	p.placePending()
	return nil
}

// line dispatches one input line on its first non-blank character.
func (p *dumpParser) line(line string, n int) error {
	i := lexSkipBlank(line, 0)
	if i == len(line) {
		return nil
	}
	switch line[i] {
	case '#':
		return p.comment(line, line[i:], n)
	case '*':
		return p.header(line, i, n)
	case ':':
		return p.chainDecl(line, i, n)
	case '[':
		j, err := p.counters(line, i, n)
		if err != nil {
			return err
		}
		k := lexSkipBlank(line, j)
		if k == len(line) || line[k] != '-' {
			return p.errAt(line, n, k, "expected a rule (-A CHAIN ...) after the counters")
		}
		if p.lazy != nil && p.table != nil {
			return p.deferRule(line, k, n)
		}
		return p.command(line, j, n)
	case '-':
		if p.lazy != nil && p.table != nil {
			return p.deferRule(line, i, n)
		}
		return p.command(line, i, n)
	}
	if strings.HasPrefix(line[i:], "COMMIT") {
		return p.commit(line, i, n)
	}
	if h := nftTextHint(line); h != "" {
		return p.errAt(line, n, i, "%s", h)
	}
	return p.errAt(line, n, i, "unrecognised line: expected a comment, *table, :CHAIN declaration, -A rule or COMMIT")
}

// errAt returns a *ParseError at the 0-based byte offset col of line n.
func (p *dumpParser) errAt(line string, n, col int, format string, args ...any) error {
	return &ParseError{
		Source: p.src,
		Line:   n,
		Column: col + 1,
		Msg:    fmt.Sprintf(format, args...),
		Text:   line,
	}
}

func (p *dumpParser) note(n int, format string, args ...any) {
	p.rs.Notes = append(p.rs.Notes, Note{Line: n, Message: fmt.Sprintf(format, args...)})
}

func lexSkipBlank(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isBuiltinChain reports whether name is one of the five built-in chains.
func isBuiltinChain(name string) bool {
	switch name {
	case "PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING":
		return true
	}
	return false
}

// parseSlab hands out sub-slices of large shared arrays, so that a rule's
// options, arguments and matches cost no allocation of their own.
type parseSlab[T any] struct {
	buf  []T
	next int
	// chunk is the array buf is what is left of (see rewind).
	chunk []T
}

func (s *parseSlab[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	if len(s.buf) < n {
		if s.next < 64 {
			s.next = 64
		} else if s.next < 8192 {
			s.next *= 2
		}
		s.chunk = make([]T, max(s.next, n))
		s.buf = s.chunk
	}
	out := s.buf[:n:n]
	s.buf = s.buf[n:]
	return out
}

// rewind hands out the slab's current array again, from its start and
// cleared, for a parser whose every product is let go: a walk scope's,
// at the scope's end (nothing taken may be used after). A scope parses
// one Service's chains, which its array soon holds whole: scope after
// scope, it parses without allocating.
func (s *parseSlab[T]) rewind() {
	clear(s.chunk[:len(s.chunk)-len(s.buf)])
	s.buf = s.chunk
}

func (s *parseSlab[T]) alloc() *T { return &s.take(1)[0] }

// runs hands out the lists of many owners (a chain's rules, its lines):
// the items of one owner come one after the other, so a run of them
// shares one large array instead of growing a slice per owner. A list is
// capped at its length, so an append by a caller copies rather than
// overwriting the next owner's.
type runs[T any] struct {
	buf   []T
	owner any // whose run buf ends with, from start
	start int
}

// append appends x to list, the list of owner.
func (r *runs[T]) append(owner any, list []T, x T) []T {
	run := owner == r.owner && len(list) > 0
	if !run && len(list) > 0 {
		r.owner = nil
		return append(list, x) // the owner's items are not contiguous
	}
	if !run {
		r.owner, r.start = owner, len(r.buf)
	}
	if len(r.buf) == cap(r.buf) {
		size := max(min(2*cap(r.buf), 1<<16), 64, 2*len(list))
		r.buf = append(make([]T, 0, size), list...)
		r.start = 0
	}
	r.buf = append(r.buf, x)
	return r.buf[r.start:len(r.buf):len(r.buf)]
}
