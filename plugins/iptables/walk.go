package iptables

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/spares"
)

// Aliases of the data-plane neutral types, for readability here.
type (
	// Packet is dataplane.Packet.
	Packet = dataplane.Packet
	// Env is dataplane.Env.
	Env = dataplane.Env
)

// state is a packet in flight on one branch. A statistic rule forks it,
// thousands of times on a large node: what few branches set is kept apart
// (rare), so that a fork copies little.
type state struct {
	pkt  Packet
	prob float64
	// hops are the rules matched so far (with policies), as the branch
	// will report them.
	hops *hopList
	opts *dataplane.WalkOptions
	dnat string
	// verdict set when the branch terminated.
	verdict, reason  string
	mark             uint32
	masq, translated bool
	// onward: the packet was taken at local input and sent on (IPVS)
	onward bool
	// srcTests are the prefixes the source was tested against.
	srcTests []netip.Prefix
	rare     *rareState
	walk     *walkState
	// res holds the one result of a rule that leaves a single branch (see
	// one): most rules do, and a walk applies thousands.
	res [1]result
}

// rareState is what few branches set. Branches forked from one share it:
// it is copied before a change (see setRare).
type rareState struct {
	redirect, missing string
	// dropWhy is kube-proxy's comment on the jump that marked the packet
	// for dropping (KUBE-MARK-DROP): why a drop on that mark happens.
	dropWhy string
	// missingAddr is the endpoint kube-proxy's comment on the jump to
	// the missing endpoint chain names.
	missingAddr string
	// recentSet are the recent lists the branch adds its source to,
	// recentChecked the ones it checked, with their --seconds.
	recentSet     []string
	recentChecked map[string]int
	notes         dataplane.Notes
	// affinity and affinityKey are an extension's client affinity (IPVS
	// persistence) on the way it chose.
	affinity    int32
	affinityKey string
	// virtual is the address the packet had when local input handed it
	// over (an IPVS virtual server's), for -m ipvs.
	virtual netip.AddrPort
	// masqBy is the rule of another component than kube-proxy that
	// masqueraded the packet (a CNI's chain in POSTROUTING).
	masqBy string
	// decidedBy is the rule of another component than kube-proxy, or the
	// built-in chain's policy, that dropped or rejected the packet.
	decidedBy string
}

// decided records who decided the branch's verdict: another component's
// rule (by), or kube-proxy's own ("": a DNAT by another component before
// it no longer decides).
func (s *state) decided(by string) {
	if by != "" || s.rare != nil && s.rare.decidedBy != "" {
		s.setRare().decidedBy = by
	}
}

// setRare is the branch's own copy of its rare state, to change.
func (s *state) setRare() *rareState {
	r := &rareState{}
	if s.rare != nil {
		*r = *s.rare
		r.recentSet, r.notes = slices.Clip(r.recentSet), slices.Clip(r.notes)
		r.recentChecked = maps.Clone(r.recentChecked)
	}
	s.rare = r
	return r
}

// one is the single result of applying a rule to s, without allocating:
// the slice is s's own. A caller that keeps it while applying another rule
// to s must copy it first (then and apply read it before they do).
func (s *state) one(f flow) []result {
	s.res[0] = result{st: s, flow: f}
	return s.res[:1:1]
}

// walkState is what the branches of one walk share.
type walkState struct {
	// spare is a state no result refers to, for the next fork: a walk
	// narrowed to one backend drops the branch to every other one at its
	// DNAT, right after forking it.
	spare *state
	// scope, for a walk of a scoped walker, holds the per-Service chains
	// its walks parsed (see Walker.Scope).
	scope *walkScope
	// opts are the walk's options, which its states point to.
	opts dataplane.WalkOptions
	// orig is the packet as the walk started (for a Gate).
	orig Packet
	// states hands out the walk's states, results its lists of results
	// (the branches a rule splits a walk into).
	states  stateArena
	results parseSlab[result]
}

// release lets the walk's states go, for the walker's next walk: no state
// outlives its walk (a branch's result is copied out of it).
func (ws *walkState) release() {
	ws.states.reset()
	ws.results.rewind()
	ws.spare, ws.scope, ws.opts = nil, nil, dataplane.WalkOptions{}
}

// stateArena hands out the states of one walk from arrays the walker's
// walks reuse: a walk forks a state for each way a rule splits it (every
// endpoint of a Service), thousands of times on a large node, and lets
// them all go when it ends.
type stateArena struct {
	chunks      [][]state
	chunk, next int
}

func (a *stateArena) take() *state {
	for a.chunk < len(a.chunks) && a.next == len(a.chunks[a.chunk]) {
		a.chunk, a.next = a.chunk+1, 0
	}
	if a.chunk == len(a.chunks) {
		a.chunks = append(a.chunks, make([]state, 16<<min(len(a.chunks), 8)))
	}
	s := &a.chunks[a.chunk][a.next]
	a.next++
	return s
}

// reset clears the states taken, which hold their walk's hops and notes,
// and hands them out again.
func (a *stateArena) reset() {
	for i := range a.chunks[:min(a.chunk, len(a.chunks))] {
		clear(a.chunks[i])
	}
	if a.chunk < len(a.chunks) {
		clear(a.chunks[a.chunk][:a.next])
	}
	a.chunk, a.next = 0, 0
}

// rules are a chain's rules as this walk reads them: a per-Service chain
// of a lazy read is parsed in the walk's scope, and kept there.
func (s *state) rules(c *Chain) []*Rule {
	if sc := s.walk.scope; sc != nil && c.lazy != nil && c.lazy.transient {
		return sc.rules(c)
	}
	return c.Rules()
}

// fork copies a branch. srcTests is shared clipped to its length, so that
// an append on either branch copies instead of writing into the other's.
func (s *state) fork() *state {
	s.srcTests = slices.Clip(s.srcTests)
	c := s.walk.spare
	if c == nil {
		c = s.walk.states.take()
	}
	s.walk.spare = nil
	*c = *s
	return c
}

// drop gives back a forked branch that left no result, for the next fork.
func (s *state) drop() { s.walk.spare = s }

func (s *state) note(format string, args ...any) { s.setRare().notes.Add(format, args...) }

// addHop records a hop unless the walk wants none.
func (s *state) addHop(h dataplane.Hop) {
	if !s.opts.NoHops {
		s.hops = s.hops.add(h)
	}
}

// hopList is a branch's hops, newest first, shared by the branches forked
// from it: a fork copies nothing.
type hopList struct {
	h    dataplane.Hop
	prev *hopList
	n    int
}

func (l *hopList) add(h dataplane.Hop) *hopList {
	n := 1
	if l != nil {
		n = l.n + 1
	}
	return &hopList{h: h, prev: l, n: n}
}

// slice is the hops in order.
func (l *hopList) slice() []dataplane.Hop {
	if l == nil {
		return nil
	}
	out := make([]dataplane.Hop, l.n)
	for i := l.n - 1; l != nil; i, l = i-1, l.prev {
		out[i] = l.h
	}
	return out
}

// Walker walks packets through a parsed ruleset. Long chains are indexed
// by destination on first use (and the index kept with the chain), so a
// walk through a large KUBE-SERVICES chain does not scan every rule.
type Walker struct {
	rs  *Ruleset
	env *Env
	// hooks are the built-in chains each hook runs, found once: a node's
	// walks enter them hundreds of thousands of times.
	hooks map[dataplane.Hook]*hookChains
	// branches are buffers for the branches of a walk.
	branches spares.List[[]dataplane.Branch]
	// walks are what one walk's branches share, reused.
	walks spares.List[walkState]
	// scopes are walk scopes ended, for the next.
	scopes spares.List[walkScope]
	// noMemo has the walker evaluate pure chains each time rather than
	// take their outcomes from their memo (see memoized): tests compare.
	noMemo bool
	// ext is what another plane adds to the walk (NewWalkerWith).
	ext Extensions
	// fixed are kube-proxy's fixed chains and its jumps from the built-in
	// chains, assumed where an excerpt lacks them (assume.go); nil when
	// the dump lacks none of them.
	fixed *Ruleset
	// tails are an excerpt's chains with what it lacks assumed
	// (assume_ext.go), by table and name ("nat/KUBE-EXT-…").
	tails map[string]assumedChain
}

// hookChains are a hook's built-in chain name (in capitals) and, for each
// of its tables in order, the table's chain of that name (nil: none).
type hookChains struct {
	name   string
	tables []string
	chains []*Chain
}

// NewWalker prepares a walker.
func NewWalker(rs *Ruleset, env *Env) *Walker {
	if env == nil {
		env = &Env{}
	}
	w := &Walker{rs: rs, env: env, hooks: map[dataplane.Hook]*hookChains{}}
	for _, h := range []dataplane.Hook{dataplane.HookPrerouting, dataplane.HookInput, dataplane.HookForward, dataplane.HookOutput, dataplane.HookPostrouting} {
		hc := &hookChains{name: strings.ToUpper(string(h)), tables: hookTables(h)}
		for _, t := range hc.tables {
			hc.chains = append(hc.chains, rs.Chain(t, hc.name))
		}
		w.hooks[h] = hc
	}
	w.fixed = assumedFor(rs)
	w.tails = extTails(rs)
	return w
}

// hookTables lists the tables of a hook in the kernel's priority order.
func hookTables(hook dataplane.Hook) []string {
	switch hook {
	case dataplane.HookPrerouting:
		return []string{"raw", "mangle", "nat"}
	case dataplane.HookInput, dataplane.HookForward:
		return []string{"mangle", "filter", "security"}
	case dataplane.HookOutput:
		return []string{"raw", "mangle", "nat", "filter", "security"}
	case dataplane.HookPostrouting:
		return []string{"mangle", "nat"}
	}
	return nil
}

// Walk returns every branch a new connection's first packet can take.
func (w *Walker) Walk(p Packet) []dataplane.Branch {
	return w.WalkWith(p, dataplane.WalkOptions{})
}

// WalkWith is Walk narrowed by o.
func (w *Walker) WalkWith(p Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return w.walkWith(p, o, nil)
}

// walkWith walks p, in the scope sc when it is set.
func (w *Walker) walkWith(p Packet, o dataplane.WalkOptions, sc *walkScope) []dataplane.Branch {
	// The branches gather in a buffer the walker's walks share, and the
	// walk keeps a copy of its own size: a slice grown by appending
	// would be made and dropped several times over.
	buf := w.branches.Get()
	out := w.appendWalk((*buf)[:0], p, o, sc)
	res := slices.Clone(out)
	clear(out)
	*buf = out[:0]
	w.branches.Put(buf)
	return res
}

// AppendWalk implements dataplane.AppendWalker.
func (w *Walker) AppendWalk(out []dataplane.Branch, p Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return w.appendWalk(out, p, o, nil)
}

// appendWalk walks p, in the scope sc when it is set, and appends its
// branches to out.
func (w *Walker) appendWalk(out []dataplane.Branch, p Packet, o dataplane.WalkOptions, sc *walkScope) []dataplane.Branch {
	ws := w.walks.Get()
	ws.scope, ws.opts, ws.orig = sc, o, p
	start := ws.states.take()
	*start = state{pkt: p, prob: 1, opts: &ws.opts, walk: ws}
	w.runHooks(start, dataplane.EntryHooks(p.Entry), &out)
	ws.release()
	w.walks.Put(ws)
	return out
}

// runHooks runs the hooks in turn, taking the routing decisions between
// them on the destination as translated so far.
func (w *Walker) runHooks(s *state, hooks []dataplane.Hook, out *[]dataplane.Branch) {
	if len(hooks) == 0 {
		if s.verdict == "" {
			s.verdict = string(dataplane.Accept)
		}
		*out = append(*out, s.finish())
		return
	}
	h, rest := hooks[0], hooks[1:]
	if h.IsRoute() {
		w.runHooks(s, h.Route(w.env.IsLocal(s.pkt.Dst), rest), out)
		return
	}
	// The built-in chains are named for their hook, in capitals.
	if hc := w.hooks[h]; hc != nil {
		w.runTables(s, hc, 0, rest, out)
		return
	}
	if w.gated(s, h, out) {
		return
	}
	w.runHooks(s, rest, out)
}

// gated applies the walker's Gate at hook h to a packet the hook's
// iptables tables let through: when another component's rule ends it, the
// branch ends there, and gated reports true.
func (w *Walker) gated(s *state, h dataplane.Hook, out *[]dataplane.Branch) bool {
	if w.ext.Gate == nil {
		return false
	}
	b, ok := w.ext.Gate.Judge(h, s.walk.orig, s.pkt, s.dnat != "")
	if !ok {
		return false
	}
	if !s.opts.NoHops {
		for _, hop := range b.Hops {
			s.addHop(hop)
		}
	}
	s.verdict, s.reason = string(b.Verdict), b.Reason
	s.setRare().decidedBy = b.DecidedBy
	*out = append(*out, s.finish())
	return true
}

// runTables runs the hook's chains from its table i on.
func (w *Walker) runTables(s *state, hc *hookChains, i int, rest []dataplane.Hook, out *[]dataplane.Branch) {
	if i == len(hc.tables) {
		if w.gated(s, dataplane.Hook(strings.ToLower(hc.name)), out) {
			return
		}
		if hc.name == "INPUT" && w.localIn(s, rest, out) {
			return
		}
		w.runHooks(s, rest, out)
		return
	}
	table, c := hc.tables[i], hc.chains[i]
	if c == nil {
		c = w.excerptEntry(s, table, hc.name)
	}
	if c == nil {
		w.runTables(s, hc, i+1, rest, out)
		return
	}
	for _, r := range w.runChain(s, table, c, 0) {
		if st := r.st; st.verdict != "" {
			if st.verdict == string(dataplane.Missing) && st.rare != nil && strings.HasPrefix(st.rare.missing, PrefixSEP) {
				st.masq = w.masqAfter(st)
			}
			*out = append(*out, st.finish())
		} else {
			w.runTables(st, hc, i+1, rest, out)
		}
	}
}

func (s *state) finish() dataplane.Branch {
	b := dataplane.Branch{
		Probability: s.prob, Verdict: dataplane.Verdict(s.verdict), Reason: s.reason,
		DNAT: s.dnat, Masquerade: s.masq, SourcePrefixes: s.srcTests, Hops: s.hops.slice(),
	}
	if r := s.rare; r != nil {
		b.Redirect, b.Missing, b.Notes = r.redirect, r.missing, r.notes
		b.MissingEndpoint = strings.HasPrefix(r.missing, PrefixSEP)
		b.MissingAddr = r.missingAddr
		if b.Masquerade {
			b.MasqueradeBy = r.masqBy
		}
		b.DecidedBy = r.decidedBy
		// ClientIP affinity: the branch adds its source to a recent list
		// that an rcheck earlier on the path consults.
		for _, set := range r.recentSet {
			if secs, ok := r.recentChecked[set]; ok {
				b.AffinitySeconds, b.AffinityKey = int32(secs), set
			}
		}
		if r.affinityKey != "" {
			b.AffinitySeconds, b.AffinityKey = r.affinity, r.affinityKey
		}
	}
	return b
}

// runChain evaluates a built-in chain of a table. Its results' states are
// those that leave the table: with a verdict (DROP, REJECT) or without one
// (the table accepted the packet, or a nat target ended the table). A
// single result is s's own (see one): the caller reads it before it walks
// the state on.
func (w *Walker) runChain(s *state, table string, c *Chain, depth int) []result {
	res := w.evalChain(s, table, c, depth)
	for _, r := range res {
		switch r.flow {
		case flowReturn, flowEnd:
			// Fell off a built-in chain: its policy.
			pol := c.Policy
			if pol == "" || pol == "-" {
				pol = string(dataplane.Accept)
			}
			if !r.st.opts.NoHops {
				r.st.addHop(dataplane.Hop{Table: table, Chain: c.Name, Rule: "policy " + pol, IsPolicy: true})
			}
			if pol == string(dataplane.Drop) {
				r.st.verdict = string(dataplane.Drop)
				r.st.reason = fmt.Sprintf("policy DROP of %s/%s", table, c.Name)
				r.st.setRare().decidedBy = w.policyOwner(table, c.Name)
			}
		}
	}
	return res
}

type flow int

const (
	flowEnd     flow = iota // reached the end of the chain
	flowReturn              // RETURN
	flowStop                // ACCEPT, DNAT, ... : the table is done
	flowVerdict             // DROP, REJECT: the packet is done
)

type result struct {
	st   *state
	flow flow
}

// evalChain runs the rules of one chain from the start.
func (w *Walker) evalChain(s *state, table string, c *Chain, depth int) []result {
	if depth > 64 {
		s.note("chain nesting deeper than 64 at %s/%s: walk stopped", table, c.Name)
		return s.one(flowStop)
	}
	if sc := s.walk.scope; sc != nil && c.lazy != nil && c.lazy.transient {
		// Not indexed: the index would keep the rules.
		return w.evalRules(s, table, c, sc.rules(c), depth)
	}
	if c.lazyIndexed() {
		return w.evalRules(s, table, c, c.lazyCandidates(s.pkt.Dst), depth)
	}
	if s.opts.NoHops && !w.noMemo && c.pure() {
		return w.memoized(s, table, c, depth)
	}
	rules := c.Rules()
	if idx := c.index(); idx != nil {
		rules = idx.rulesFor(s.pkt.Dst)
	}
	return w.evalRules(s, table, c, rules, depth)
}

func (w *Walker) evalRules(s *state, table string, c *Chain, rules []*Rule, depth int) []result {
	// done gathers the branches a statistic rule took; the branch that
	// did not take it goes on down the chain.
	var done []result
	for i, r := range rules {
		m := w.matches(s, r)
		if m.prob == 0 {
			continue
		}
		if m.prob < 1 {
			// A statistic branch: the matched share takes this rule, the
			// unmatched share goes on with the next one.
			if r.jump != nil && !r.Goto && w.elsewhere(s, r.jump) {
				s.prob *= 1 - m.prob
				continue
			}
			hit := s.fork()
			hit.prob *= m.prob
			s.prob *= 1 - m.prob
			res := w.then(w.apply(hit, table, c, r, m.prob, depth), table, c, rules[i+1:], depth)
			if len(res) == 0 {
				hit.drop()
			}
			if done == nil {
				// At most one fork per rule left, mostly.
				done = s.walk.results.take(len(rules) - i)[:0]
			}
			done = append(done, res...)
			continue
		}
		return withDone(done, w.then(w.apply(s, table, c, r, 0, depth), table, c, rules[i+1:], depth))
	}
	if w.rs.Excerpt != "" && w.cutHere(s, table, c) {
		s.verdict, s.setRare().missing = string(dataplane.Missing), c.Name
		return withDone(done, s.one(flowVerdict))
	}
	return withDone(done, s.one(flowEnd))
}

// withDone is the results of the branches done before, then res.
func withDone(done, res []result) []result {
	if done == nil {
		return res
	}
	return append(done, res...)
}

// then continues the branches that a rule left running (a non-terminating
// target, a returned jump) with the rest of the chain.
func (w *Walker) then(res []result, table string, c *Chain, rest []*Rule, depth int) []result {
	switch len(res) {
	case 0:
		return res
	case 1:
		// The common case, without a slice of its own.
		if x := res[0]; x.flow == flowEnd {
			return w.evalRules(x.st, table, c, rest, depth)
		}
		return res
	}
	out := res[0].st.walk.results.take(len(res))[:0]
	for _, x := range res {
		if x.flow == flowEnd {
			out = append(out, w.evalRules(x.st, table, c, rest, depth)...)
			continue
		}
		out = append(out, x)
	}
	return out
}

// apply performs a matched rule's target. flowEnd means "continue with the
// next rule of this chain".
func (w *Walker) apply(s *state, table string, c *Chain, r *Rule, p float64, depth int) []result {
	s.addHop(dataplane.Hop{Table: table, Chain: c.Name, Line: r.Line, Rule: r.Raw, Probability: p})
	recordRecentSets(s, r)
	if res, ok := w.applyTarget(s, table, c, r); ok {
		return res
	}
	target := w.jumpTarget(s, table, r)
	if target == nil {
		return missingTarget(s, table, r)
	}
	if target.Name == "KUBE-MARK-DROP" && r.Comment() != "" {
		s.setRare().dropWhy = r.Comment()
	}
	return jumpResults(w.evalChain(s, table, target, depth+1), r.Goto)
}

// verdictReason is why a rule drops or rejects: kube-proxy's comment on
// it, else the chain it is in (ipvs mode's source-range firewall has no
// comment on its DROP).
func verdictReason(table string, c *Chain, r *Rule) string {
	if reason := r.Comment(); reason != "" {
		return reason
	}
	return "a rule of " + table + "/" + c.Name
}

func (w *Walker) dnat(s *state, r *Rule) {
	var d dnatFact
	if r.facts != nil {
		d = r.facts.dnat
	}
	if !d.set {
		o, ok := r.TargetOption("to-destination")
		if !ok || len(o.Args) == 0 {
			s.note("%s: DNAT without --to-destination", r.Ref())
			return
		}
		d = readDNAT(o.Args[0])
	}
	if d.portNum != 0 && d.joined != "" {
		s.pkt.Dst, s.pkt.DstPort, s.dnat, s.translated = d.addr, d.portNum, d.joined, true
		return
	}
	port := d.port
	if port == "" {
		port = strconv.Itoa(int(s.pkt.DstPort))
	}
	switch {
	case !d.addr.IsValid():
		s.dnat = d.to
		s.note("%s: DNAT target %q is a range or not an address", r.Ref(), d.to)
	case d.port != "":
		s.pkt.Dst, s.dnat = d.addr, d.joined
	default:
		s.pkt.Dst, s.dnat = d.addr, joinHostPort(d.addr.String(), port)
	}
	if pn, err := strconv.ParseUint(port, 10, 16); err == nil {
		s.pkt.DstPort = uint16(pn)
	}
	s.translated = true
}

// dnatFact is a DNAT target's --to-destination, read once when the rule is
// parsed: to as written, its address (invalid for a range or a name), its
// port ("" for none: the packet's), and the two joined when both are set.
type dnatFact struct {
	to, port, joined string
	addr             netip.Addr
	portNum          uint16
	set              bool
}

func readDNAT(to string) dnatFact {
	host, port := splitHostPort(to)
	d := dnatFact{to: to, port: port, set: true}
	if a, err := netip.ParseAddr(host); err == nil {
		d.addr = a
		if port != "" {
			d.joined = joinHostPort(a.String(), port)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err == nil {
			d.portNum = uint16(n)
		}
	}
	return d
}

func (w *Walker) mark(s *state, r *Rule) {
	for _, o := range r.TargetOptions {
		if len(o.Args) == 0 {
			continue
		}
		v, m, ok := parseMark(o.Args[0])
		if !ok {
			s.note("%s: cannot read mark %q", r.Ref(), o.Args[0])
			continue
		}
		switch o.Name {
		case "set-xmark":
			s.mark = (s.mark &^ m) ^ v
		case "set-mark":
			s.mark = (s.mark &^ m) | v
		case "or-mark":
			s.mark |= v
		case "xor-mark":
			s.mark ^= v
		case "and-mark":
			s.mark &= v
		}
	}
}

func splitHostPort(s string) (string, string) {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 {
			host := s[1:i]
			rest := s[i+1:]
			return host, strings.TrimPrefix(rest, ":")
		}
	}
	if strings.Count(s, ":") == 1 {
		i := strings.Index(s, ":")
		return s[:i], s[i+1:]
	}
	return s, ""
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
