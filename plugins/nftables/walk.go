package nftables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/spares"
)

// setRef names a set of a table.
type setRef struct {
	table *Table
	set   string
}

// walker walks packets through one family's tables.
type walker struct {
	p     *Plane
	env   *dataplane.Env
	hooks map[string][]baseChain
	// dynamic marks the sets rules write to: their
	// elements are per-client state, so a lookup matches only for the
	// sets Env.Sticky names.
	dynamic map[setRef]bool
	// uniforms are the alternatives of numgen and hash expressions, by
	// modulus and offset, made once: every Service's chain has one, and
	// nothing changes them.
	uniforms sync.Map // [2]int -> []alt
	// bufs are the buffers of walks, reused by the next.
	bufs spares.List[walkBufs]
}

// walkBufs are a walk's buffers: its branches (the walk keeps a copy of
// its own size, not a slice grown by appending) and the parts of the
// keys it evaluates (evalKey).
type walkBufs struct {
	branches []dataplane.Branch
	scratch  []value
}

// maxBranches bounds the forks of one walk and maxSteps the rules it
// evaluates (hand-made input could nest random maps or jumps without end).
const (
	maxBranches = 10000
	maxSteps    = 1000000
)

// state is a packet in flight on one branch.
type state struct {
	pkt, orig dataplane.Packet
	hook      string
	prob      float64
	hops      []dataplane.Hop
	opts      dataplane.WalkOptions
	mark      uint32
	dnat      string
	// dnatted, snatted: the connection has a destination / source NAT
	// binding (ct status dnat/snat); untracked: notrack ran.
	dnatted, snatted, untracked bool
	masq                        bool
	verdict                     dataplane.Verdict
	reason, missing, redirect   string
	// decidedBy is the rule of another table than kube-proxy's, or a
	// base chain's policy there, that dropped or rejected the packet.
	decidedBy string
	affKey    string
	affSecs   int32
	srcs      []netip.Prefix
	notes     dataplane.Notes
	// out and res hold the one outcome of a statement or a chain that
	// leaves a single branch (see one and ended), without allocating:
	// most do, and a walk of a large node runs millions.
	out [1]ruleOut
	res [1]result
}

// one is the single outcome o of a rule on s, in s's own slice. A caller
// that keeps it while running another rule on s must copy it first.
func (s *state) one(o ruleOut) []ruleOut {
	s.out[0] = o
	return s.out[:1:1]
}

// ended is the single result of a chain on s, flowing f, in s's own
// slice (see one).
func (s *state) ended(f flow) []result {
	s.res[0] = result{s, f}
	return s.res[:1:1]
}

// clone forks a branch; slices are cut to their length so that an append
// on one branch never writes into the other's.
func (s *state) clone() *state {
	s.hops = slices.Clip(s.hops)
	s.srcs = slices.Clip(s.srcs)
	s.notes = slices.Clip(s.notes)
	c := *s
	return &c
}

func (s *state) note(format string, args ...any) { s.notes.Add(format, args...) }

func (s *state) addSource(p netip.Prefix) {
	if s.opts.NoSourcePrefixes {
		return
	}
	for _, x := range s.srcs {
		if x == p {
			return
		}
	}
	s.srcs = append(s.srcs, p)
}

func (s *state) finish() dataplane.Branch {
	if s.verdict == "" {
		s.verdict = dataplane.Accept
	}
	return dataplane.Branch{
		Probability: s.prob, Hops: slices.Clip(s.hops), Verdict: s.verdict, Reason: s.reason,
		DNAT: s.dnat, Redirect: s.redirect, Missing: s.missing, Masquerade: s.masq, DecidedBy: s.decidedBy,
		MissingEndpoint: strings.HasPrefix(s.missing, prefixEndpoint),
		AffinitySeconds: s.affSecs, AffinityKey: s.affKey, SourcePrefixes: s.srcs, Notes: s.notes,
	}
}

// walk is one Walk call.
type walk struct {
	w *walker
	// scope, when set, keeps the per-Service chains the walk enters (see
	// walkScope).
	scope        *walkScope
	forks, steps int
	out          []dataplane.Branch
	// scratch holds the parts of the last concatenation evalKey made.
	scratch []value
}

// Walk returns every branch the first packet of a new connection can take
// through the family's base chains, in netfilter order.
func (w *walker) Walk(pkt dataplane.Packet) []dataplane.Branch {
	return w.WalkWith(pkt, dataplane.WalkOptions{})
}

// WalkWith is Walk narrowed by o.
func (w *walker) WalkWith(pkt dataplane.Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return w.walkWith(pkt, o, nil)
}

// walkWith is WalkWith in a scope (nil: none).
func (w *walker) walkWith(pkt dataplane.Packet, o dataplane.WalkOptions, sc *walkScope) []dataplane.Branch {
	k := &walk{w: w, scope: sc}
	s := &state{pkt: pkt, orig: pkt, prob: 1, opts: o}
	if pkt.Dst.Is4() != (w.p.fam == "ip") || pkt.Src.Is4() != (w.p.fam == "ip") {
		s.note("packet %s is not of family %s: no %s table sees it", pkt, w.p.family, w.p.fam)
		return []dataplane.Branch{s.finish()}
	}
	if pkt.Entry != dataplane.Output && pkt.Entry != dataplane.Prerouting {
		s.note("entry %q unknown: walked as an arriving packet (prerouting)", pkt.Entry)
	}
	buf := w.bufs.Get()
	if buf.scratch == nil {
		buf.scratch = make([]value, 0, 8)
	}
	k.out, k.scratch = buf.branches[:0], buf.scratch[:0]
	k.hooks(s, dataplane.EntryHooks(pkt.Entry))
	res := slices.Clone(k.out)
	clear(k.out)
	clear(k.scratch[:cap(k.scratch)])
	buf.branches, buf.scratch = k.out[:0], k.scratch[:0]
	w.bufs.Put(buf)
	return res
}

// hooks runs the hooks in turn, taking the routing decisions between them
// on the destination as translated so far.
func (k *walk) hooks(s *state, hooks []dataplane.Hook) {
	if len(hooks) == 0 {
		k.out = append(k.out, s.finish())
		return
	}
	h, rest := hooks[0], hooks[1:]
	if h.IsRoute() {
		local := k.w.env.IsLocal(s.pkt.Dst)
		if h == dataplane.RouteLoopback && local {
			// Delivered over loopback: the input interface is lo.
			s.pkt.InIface = "lo"
		}
		k.hooks(s, h.Route(local, rest))
		return
	}
	s.hook = string(h)
	k.chains(s, s.hook, k.w.hooks[s.hook], rest)
}

// chains runs the base chains of a hook in priority order. An accept ends
// only its own base chain; drop and reject end the packet.
func (k *walk) chains(s *state, hook string, list []baseChain, rest []dataplane.Hook) {
	if len(list) == 0 {
		k.hooks(s, rest)
		return
	}
	bc := list[0]
	if bc.c.Type == "nat" && natDone(s, hook) {
		// The kernel runs nat chains only until one sets up the
		// connection's binding for that direction, and never for an
		// untracked packet.
		k.chains(s, hook, list[1:], rest)
		return
	}
	for _, r := range k.base(s, bc) {
		if r.verdict != "" {
			k.out = append(k.out, r.finish())
			continue
		}
		k.chains(r, hook, list[1:], rest)
	}
}

func natDone(s *state, hook string) bool {
	if s.untracked {
		return true
	}
	if hook == "prerouting" || hook == "output" {
		return s.dnatted
	}
	return s.snatted
}

// base runs one base chain; falling off it (or returning from it) applies
// its policy.
func (k *walk) base(s *state, bc baseChain) []*state {
	var out []*state
	for _, r := range k.chain(s, bc.t, bc.c, 0, nil) {
		if r.flow == flowEnd || r.flow == flowReturn {
			pol := bc.c.Policy
			if pol == "" {
				pol = "accept"
			}
			if !r.st.opts.NoHops {
				r.st.hops = append(r.st.hops, dataplane.Hop{Table: bc.t.ID(), Chain: bc.c.Name, Rule: "policy " + pol, IsPolicy: true})
			}
			if pol == "drop" {
				r.st.verdict = dataplane.Drop
				r.st.reason = fmt.Sprintf("policy drop of %s %s", bc.t.ID(), bc.c.Name)
				if bc.t.Name != kubeProxyTable {
					r.st.decidedBy = fmt.Sprintf("the policy drop of chain %s of table %s", bc.c.Name, bc.t.ID())
				}
			}
		}
		out = append(out, r.st)
	}
	return out
}

type flow int

const (
	flowEnd     flow = iota // fell off the end of the chain
	flowReturn              // return (or the end of a goto'd chain)
	flowAccept              // accept, or a NAT statement: this base chain is done
	flowVerdict             // drop, reject, redirect, missing: the packet is done
)

type result struct {
	st   *state
	flow flow
}

// chain runs a chain from its first rule. via is the map element whose
// verdict led here (for the reason of a drop or reject).
func (k *walk) chain(s *state, t *Table, c *Chain, depth int, via *hit) []result {
	if depth > 64 {
		s.note("chains nested deeper than 64 at %s %s: walk stopped there", t.ID(), c.Name)
		return s.ended(flowAccept)
	}
	if k.scope != nil {
		k.scope.enter(t, c)
	}
	return k.rules(s, t, c, c.rules(), depth, via)
}

func (k *walk) rules(s *state, t *Table, c *Chain, rules []*Rule, depth int, via *hit) []result {
	for i, r := range rules {
		if k.steps++; k.steps > maxSteps {
			s.note("more than %d rule evaluations: walk stopped at %s %s", maxSteps, t.ID(), c.Name)
			return s.ended(flowAccept)
		}
		outs := k.stmts(s, t, c, r, 0, rctx{prob: 1, via: via})
		if len(outs) == 1 && outs[0].kind == outNoMatch {
			s = outs[0].st
			continue
		}
		if len(outs) == 1 {
			return k.after(outs[0], t, c, rules[i+1:], depth, via)
		}
		var res []result
		for _, o := range outs {
			res = append(res, k.after(o, t, c, rules[i+1:], depth, via)...)
		}
		return res
	}
	return s.ended(flowEnd)
}

// after continues a branch after one rule.
func (k *walk) after(o ruleOut, t *Table, c *Chain, rest []*Rule, depth int, via *hit) []result {
	switch o.kind {
	case outNoMatch, outNext:
		return k.rules(o.st, t, c, rest, depth, via)
	case outAccept:
		return o.st.ended(flowAccept)
	case outVerdict:
		return o.st.ended(flowVerdict)
	case outReturn:
		return o.st.ended(flowReturn)
	}
	target := t.Chain(o.target)
	if target == nil {
		// Only hand-edited input can name a chain that does not exist
		// (the kernel refuses such a rule).
		o.st.verdict, o.st.missing = dataplane.Missing, o.target
		if k.scope != nil {
			k.scope.lack(t, o.target)
		}
		return o.st.ended(flowVerdict)
	}
	var res []result
	for _, x := range k.chain(o.st, t, target, depth+1, o.via) {
		switch {
		case x.flow != flowEnd && x.flow != flowReturn:
			res = append(res, x)
		case o.kind == outGoto:
			// A goto'd chain returns to the caller of this one.
			res = append(res, result{x.st, flowReturn})
		default:
			res = append(res, k.rules(x.st, t, c, rest, depth, via)...)
		}
	}
	return res
}
