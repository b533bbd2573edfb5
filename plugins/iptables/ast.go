// Package iptables reads, explains and compares kube-proxy's iptables data
// plane: it parses iptables-save (and iptables -S) output, walks packets
// through the parsed rules the way the kernel does, and turns the result
// into a behaviour table.
package iptables

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Ruleset is one parsed dump: every table of one IP family.
type Ruleset struct {
	// Source names the input (a file name, "iptables-save (nf_tables)").
	Source string
	// Family is "IPv4" or "IPv6".
	Family string
	// Backend is "nf_tables" or "legacy" when the dump's header says so.
	Backend string
	// Excerpt, when set, says why the dump is only part of the node's
	// rules (no table headers): what it lacks proves nothing.
	Excerpt string
	Tables  map[string]*Table
	// TableOrder lists table names in the order they appeared.
	TableOrder []string
	// Notes record what the parser inferred (a table from chain names) or
	// kept without understanding (unknown match modules and targets). A
	// ruleset read lazily adds the notes of chains parsed later: read all
	// with AllNotes.
	Notes []Note
	// lazy are the states of lazy reads this ruleset's chains come from
	// (several when dumps were merged).
	lazy []*lazyState
	// facts, for a ruleset read with its dump's digest, answer the
	// questions about the whole dump (see digest.go); nil otherwise.
	facts *dumpFacts
	// rest, for a full read, are its per-Service chains, parsed by the
	// walks that enter them; checkRest parses those no walk did.
	rest     []*Chain
	restOnce sync.Once
	// clean are the per-Service chains (by partID) an earlier read of
	// the node parsed cleanly, with the same lines: checkRest leaves them
	// (see Plane.KnownClean).
	clean atomic.Pointer[map[uint64]bool]
}

// Note is something a reader of the dump should know, tied to a line.
type Note struct {
	Line    int
	Message string
}

func (n Note) String() string {
	if n.Line > 0 {
		return fmt.Sprintf("line %d: %s", n.Line, n.Message)
	}
	return n.Message
}

// Table is one iptables table (filter, nat, mangle, raw, security).
type Table struct {
	Name   string
	Chains map[string]*Chain
	// ChainOrder lists chain names in the order they were declared (or
	// first seen).
	ChainOrder []string
	// order are the chains in ChainOrder's order.
	order []*Chain
	// dig, for a table read with a digest, makes its chains when they are
	// first needed: Chains, ChainOrder and order are then filled only by
	// chains(), and Chain looks a chain up without them.
	dig *tableDigest
}

// Chain is the table's chain of that name, or nil.
func (t *Table) Chain(name string) *Chain {
	if t.dig != nil {
		return t.dig.lookup(name)
	}
	return t.Chains[name]
}

// chains are the table's chains, in order.
func (t *Table) chains() []*Chain {
	if t.dig != nil {
		t.dig.fill()
	}
	return t.order
}

// size is the number of the table's chains.
func (t *Table) size() int {
	if t.dig != nil {
		return t.dig.count
	}
	return len(t.order)
}

// Chain is a built-in or user-defined chain.
type Chain struct {
	Name string
	// Policy is the built-in chain's policy (ACCEPT, DROP); "-" or empty
	// for user-defined chains.
	Policy string
	// Builtin is true for PREROUTING, INPUT, FORWARD, OUTPUT, POSTROUTING.
	Builtin bool
	// Line is where the chain was declared (0 if only seen in a rule).
	Line int

	// rules are the chain's rules in order: read them with Rules, which
	// parses them first in a ruleset read lazily (lazy holds their lines).
	rules []*Rule
	lazy  *lazyChain
	// pos is the chain's place in its table's ChainOrder.
	pos int
	// worked is what walks work out of the chain, made when one first
	// needs it (see work): most of a large node's chains are one
	// Service's, which need none of it.
	worked atomic.Pointer[chainWork]
}

// chainWork is what walks work out of a chain, each part on first use.
type chainWork struct {
	// idx indexes a long chain by destination.
	idx     *chainIndex
	idxOnce sync.Once
	// lidx indexes a long chain of a lazy read by the text of its lines
	// (see lazyIndexed).
	lidx     *lazyIndex
	lidxOnce sync.Once
	// trans is what the chain surely does to a packet (see
	// surelyTranslates).
	trans     *translation
	transOnce sync.Once
	// isPure is whether the chain's outcome depends on a packet's mark and
	// state alone (see pure).
	isPure   bool
	pureOnce sync.Once
	// outcomes are a pure chain's outcomes met so far (see memoized).
	outcomes atomic.Pointer[[]memoOutcome]
}

// work is the chain's chainWork, made on first use.
func (c *Chain) work() *chainWork {
	if w := c.worked.Load(); w != nil {
		return w
	}
	c.worked.CompareAndSwap(nil, &chainWork{})
	return c.worked.Load()
}

// Rules are the chain's rules, in order. A chain of a ruleset read for a
// narrowed analysis is parsed here on first use; an error in it is told by
// the ruleset's Err, and the chain then holds the rules before it.
func (c *Chain) Rules() []*Rule {
	if l := c.lazy; l != nil {
		l.once.Do(func() { l.parse(c) })
	}
	return c.rules
}

// Len is the number of the chain's rules, without parsing them.
func (c *Chain) Len() int {
	if l := c.lazy; l != nil {
		return l.count()
	}
	return len(c.rules)
}

// index is the chain's index by destination, nil for a short chain (a
// scan is as fast).
func (c *Chain) index() *chainIndex {
	rules := c.Rules()
	if len(rules) < minIndexed {
		return nil
	}
	w := c.work()
	w.idxOnce.Do(func() { w.idx = buildIndex(rules) })
	return w.idx
}

// Rule is one parsed -A line.
type Rule struct {
	Table string
	Chain string
	// Line is the 1-based line number in the input.
	Line int
	// Raw is the rule exactly as it appeared (without a trailing newline).
	Raw string

	// Generic matches, nil when absent.
	Source   *AddrMatch
	Dest     *AddrMatch
	InIface  *IfaceMatch
	OutIface *IfaceMatch
	Protocol *ProtoMatch
	// Fragment is -f (true) or ! -f (negated).
	Fragment *bool

	// Matches are the -m modules in the order given.
	Matches []Match

	// Target is the -j or -g target ("" for a rule with no target).
	Target string
	// Goto is true for -g.
	Goto bool
	// TargetOptions are the target's options (--to-destination, ...).
	TargetOptions []Option

	// Unknown lists what the parser kept verbatim without understanding
	// it: unknown match modules or targets, unknown options of known
	// modules.
	Unknown []string

	// facts are what walks read of a statistic match or a DNAT target,
	// read once when the rule is parsed (nil for a rule with neither).
	facts *ruleFacts
	// jump is the chain of the rule's table its target names, when the
	// parser checked it.
	jump *Chain
}

// AddrMatch is -s/-d with an optional negation.
type AddrMatch struct {
	Negate bool
	Prefix netip.Prefix
	// Redacted is the text that stands where someone removed the
	// address (xxx.xxx.xxx.xxx, <public-ip>); Prefix is then not valid.
	Redacted string
}

// IfaceMatch is -i/-o; a trailing + in Name is a prefix wildcard.
type IfaceMatch struct {
	Negate bool
	Name   string
}

// ProtoMatch is -p.
type ProtoMatch struct {
	Negate bool
	Name   string // lower case: tcp, udp, sctp, icmp, all, or a number
}

// Match is one -m module with its options.
type Match struct {
	Module  string
	Options []Option
	// Known is false for modules the parser does not understand; their
	// options are kept verbatim.
	Known bool
}

// Option is one --name [args...] with an optional leading !.
type Option struct {
	Negate bool
	Name   string // without the leading dashes
	Args   []string
}

// Option returns the first option with that name.
func (m *Match) Option(name string) (Option, bool) {
	for _, o := range m.Options {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// Match returns the first match of that module.
func (r *Rule) Match(module string) (*Match, bool) {
	for i := range r.Matches {
		if r.Matches[i].Module == module {
			return &r.Matches[i], true
		}
	}
	return nil, false
}

// TargetOption returns the first target option with that name.
func (r *Rule) TargetOption(name string) (Option, bool) {
	for _, o := range r.TargetOptions {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// Comment returns the rule's -m comment text, if any.
func (r *Rule) Comment() string {
	if m, ok := r.Match("comment"); ok {
		if o, ok := m.Option("comment"); ok && len(o.Args) > 0 {
			return o.Args[0]
		}
	}
	return ""
}

// Ref names the rule for messages: table, chain and line.
func (r *Rule) Ref() string {
	return fmt.Sprintf("%s/%s line %d", r.Table, r.Chain, r.Line)
}

// Chain returns a chain of a table, or nil.
func (rs *Ruleset) Chain(table, chain string) *Chain {
	t, ok := rs.Tables[table]
	if !ok {
		return nil
	}
	return t.Chain(chain)
}

// ParseError is a syntax error in a dump, naming the input, line and
// column (both 1-based).
type ParseError struct {
	Source string
	Line   int
	Column int
	Msg    string
	Text   string // the offending line
}

func (e *ParseError) Error() string {
	src := e.Source
	if src == "" {
		src = "<input>"
	}
	return fmt.Sprintf("%s:%d:%d: %s", src, e.Line, e.Column, e.Msg)
}
