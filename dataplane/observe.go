package dataplane

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/svctrace/svctrace/behavior"
)

// ObserveInput is what Observe needs beyond the kernel state.
type ObserveInput struct {
	Node   string
	Family string
	// NodeIPs are the node's addresses. When empty a stand-in address is
	// used and said in a note.
	NodeIPs      []netip.Addr
	ClusterCIDRs []netip.Prefix
	// LocalAddrs are every address local to the node (NodeIPs and the
	// addresses of its other interfaces, when known): a packet DNATed to
	// one of them is delivered locally, never forwarded.
	LocalAddrs []netip.Addr
	// Probes is the space probe sources are chosen from (no endpoint of
	// the API, no address of the node): see behavior.ProbeSpace. Its
	// NodeIPs are NodeIPs then LocalAddrs.
	Probes behavior.ProbeSpace
	// Expected frontends are walked even when the state does not mention
	// them, so a missing frontend shows as unhandled; their kinds and
	// services name what the state alone cannot.
	Expected []behavior.Frontend
	// Only, when set, limits the walks to the Expected frontends and the
	// state's frontends it accepts: a question about one Service need not
	// walk the node's thousands of others.
	Only func(behavior.Frontend) bool
	// NoRules leaves the rules out of the outcomes, and the walks record
	// no hops: for a whole node's drift, where only a frontend with a
	// finding shows its rules (and is observed again for them).
	NoRules bool
	// PodIface is the interface a pod's packets arrive on, for a
	// local-traffic detector that goes by interface (see Env.PodIface).
	PodIface string
	// HairpinDueOnly probes an endpoint reaching itself through a
	// frontend only where the Expected frontend calls for hairpin
	// masquerading (an endpoint on the node), which is all drift compares
	// of it; every other backend's HairpinMasquerade is left false. On a
	// node of many, most endpoints are elsewhere, and these probes were
	// most of the walks. A frontend not expected is probed for all.
	HairpinDueOnly bool
	// Memo, when set, is the last observation of the node and family:
	// the frontends whose walks depend on nothing that changed since take
	// its outcomes instead of being walked again (see ObserveMemo), and
	// the memo then holds this observation.
	Memo *ObserveMemo
}

// Observe walks the kernel state for every frontend it or the expected
// table mentions and returns what the kernel does with each: the observed
// behaviour table. It works on any data plane through Plane.
func Observe(p Plane, in ObserveInput) *behavior.Table {
	t := &behavior.Table{Node: in.Node, Family: in.Family}
	nodeIPs := in.NodeIPs
	if len(nodeIPs) == 0 {
		pr := behavior.ChooseProbes(nil, nil, nil)
		nodeIPs = []netip.Addr{pr.Node}
		t.Notes = append(t.Notes, fmt.Sprintf("node addresses unknown: %s stands in for the node's address", pr.Node))
	}
	env := &Env{LocalAddrs: append(append([]netip.Addr(nil), nodeIPs...), in.LocalAddrs...), PodIface: in.PodIface}
	space := in.Probes
	if len(space.NodeIPs) == 0 {
		sorted := space.TakenSorted
		space = behavior.NewProbeSpace(in.ClusterCIDRs, env.LocalAddrs, space.Taken)
		space.TakenSorted = sorted
	}
	w := p.Walker(env)

	keys := map[behavior.Key]*behavior.Frontend{}
	var order []behavior.Key
	add := func(f behavior.Frontend) {
		if _, ok := keys[f.Key]; ok {
			return
		}
		keys[f.Key] = &behavior.Frontend{Key: f.Key, Service: f.Service, SourceRanges: f.SourceRanges, Listed: f.Listed}
		order = append(order, f.Key)
	}
	// A frontend the state names with another kind than the model (an
	// address that is an external IP of one Service is only an address to
	// the kernel) takes the model's kind.
	kinds := map[frontendAddr]behavior.FrontendKind{}
	for _, f := range in.Expected {
		add(f)
		kinds[addrKey(f.Key)] = f.Key.Kind
	}
	for _, f := range p.Frontends() {
		if k, ok := kinds[addrKey(f.Key)]; ok && f.Key.Kind != behavior.NodePort && k != behavior.NodePort {
			f.Key.Kind = k
		}
		if _, expected := keys[f.Key]; !expected && in.Only != nil && !in.Only(f) {
			continue
		}
		add(f)
		keys[f.Key].Listed = true
	}
	describe := p.Describe
	if in.NoRules {
		describe = nil
	}
	var due map[behavior.Key]*behavior.Frontend
	if in.HairpinDueOnly {
		due = make(map[behavior.Key]*behavior.Frontend, len(in.Expected))
		for i := range in.Expected {
			due[in.Expected[i].Key] = &in.Expected[i]
		}
	}
	memo := startMemo(p, in, env, space)
	assumed, reused, groups := observeAll(w, describe, env, space, keys, order, due, memo)
	for _, k := range order {
		t.Frontends = append(t.Frontends, *keys[k])
	}
	t.Notes = append(t.Notes, p.Notes()...)
	memo.finish(in.Memo, p, reused, groups-reused)
	t.Notes = append(t.Notes, assumed...)
	t.Sort()
	return t
}

// frontendAddr is a key without its kind.
type frontendAddr struct {
	ip, protocol string
	port         int32
}

func addrKey(k behavior.Key) frontendAddr {
	return frontendAddr{k.IP, k.Protocol, k.Port}
}

// observeFrontend walks f's probes and fills its outcomes; exp, when set,
// is the expected frontend, whose backends due hairpin masquerading are the
// only ones probed for it (see ObserveInput.HairpinDueOnly).
func observeFrontend(w *walks, describe func(Hop) HopInfo, env *Env, f *behavior.Frontend, space behavior.ProbeSpace, exp *behavior.Frontend) {
	dst := space.NodeIPs[0]
	if f.Key.IP != "" {
		if a, err := netip.ParseAddr(f.Key.IP); err == nil {
			dst = a
		}
	}
	proto := strings.ToLower(f.Key.Protocol)
	pkt := func(src netip.Addr, entry Entry) Packet {
		return Packet{Src: src, Dst: dst, Protocol: proto, SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: entry}
	}
	f.SourceRanges, f.OutsideRanges = observeFirewall(w, f, space, pkt, describe == nil)
	probes := space.Choose(behavior.ParsePrefixes(f.SourceRanges))

	f.Outcomes = map[behavior.SourceClass]behavior.Outcome{}
	// Only the firewall's probe asks which ranges the source was tested
	// against; the external class's walk is the same walk.
	full := WalkOptions{NoHops: describe == nil, NoSourcePrefixes: true}
	external := WalkOptions{NoHops: describe == nil}
	for _, c := range behavior.SourceClasses {
		var br []Branch
		switch c {
		case behavior.FromPod:
			p := pkt(probes.Pod, Prerouting)
			p.InIface = env.PodIface
			br = w.walk(p, full)
		case behavior.FromNode:
			br = w.walk(pkt(probes.Node, Output), full)
		case behavior.FromExternal:
			br = w.walk(pkt(probes.External, Prerouting), external)
		}
		f.Outcomes[c] = summarize(br, describe)
		if f.Affinity == nil {
			f.Affinity = affinityOf(br)
		}
	}
	// Hairpin: an endpoint reaching itself through the frontend is
	// masqueraded. An endpoint on one of the node's addresses (a
	// hostNetwork Pod, the API server on a control-plane node) is the node
	// itself: its connections start in OUTPUT, not on an interface.
	o := f.Outcomes[behavior.FromPod]
	for i, b := range o.Backends {
		if exp != nil && !hairpinDue(exp, b.Endpoint) {
			continue
		}
		ap, err := netip.ParseAddrPort(b.Endpoint)
		if err != nil {
			continue
		}
		p := pkt(ap.Addr(), Prerouting)
		p.InIface = env.PodIface
		if env.IsLocal(ap.Addr()) {
			p.Entry, p.InIface = Output, ""
		}
		// Only the branch to this endpoint answers, and only its outcome.
		for _, br := range w.walk(p, WalkOptions{Toward: ap, NoHops: true, NoSourcePrefixes: true}) {
			if br.DNAT == b.Endpoint && br.Masquerade {
				o.Backends[i].HairpinMasquerade = true
			}
		}
	}
	f.Outcomes[behavior.FromPod] = o
	shareBackends(f.Outcomes)
}

// shareBackends makes the outcomes whose backends are equal share one
// list: the source classes mostly reach the same backends alike, and a
// table's backends are not changed once it is made (see Table.Sort).
func shareBackends(outcomes map[behavior.SourceClass]behavior.Outcome) {
	var lists [][]behavior.Backend
	for _, c := range behavior.SourceClasses {
		o, ok := outcomes[c]
		if !ok || o.Backends == nil {
			continue
		}
		if l := equalList(lists, o.Backends); l != nil {
			o.Backends = l
			outcomes[c] = o
			continue
		}
		lists = append(lists, o.Backends)
	}
}

// hairpinDue reports whether the expected frontend e calls for hairpin
// masquerading of endpoint ep (ip:port).
func hairpinDue(e *behavior.Frontend, ep string) bool {
	for _, b := range e.Outcomes[behavior.FromPod].Backends {
		if b.Endpoint == ep {
			return b.HairpinMasquerade
		}
	}
	return false
}

// observeFirewall finds the source ranges a frontend lets through when a
// source outside them is not forwarded, and what happens to such a source.
// Candidate ranges are the ones the state or the model names; a candidate
// that only loopback or node addresses fill (kube-proxy's "block incoming
// localnet connections" rule tests 127.0.0.0/8) is no client range.
func observeFirewall(w *walks, f *behavior.Frontend, space behavior.ProbeSpace, pkt func(netip.Addr, Entry) Packet, noHops bool) ([]string, behavior.Verdict) {
	cands := behavior.ParsePrefixes(f.SourceRanges)
	probes := space.Choose(cands)
	// As the external class walks it: it often walks the same packet.
	tested := sourceCandidates(w.walk(pkt(probes.External, Prerouting), WalkOptions{NoHops: noHops}), space.ClusterCIDRs)
	isRange := func(c netip.Prefix) bool { return !c.IsSingleIP() }
	if !slices.ContainsFunc(cands, isRange) && !slices.ContainsFunc(tested, isRange) {
		// Only ranges can be allowed below: without one (the hairpin
		// rules of endpoints test single addresses), no probe is needed.
		return nil, ""
	}
	cands = mergePrefixes(cands, tested)
	probes = space.Choose(cands)
	verdictOnly := WalkOptions{NoHops: true, NoSourcePrefixes: true}
	// A verdict of another component (a FORWARD policy of DROP) comes
	// after kube-proxy's firewall: what reaches it passed the firewall.
	passes := func(o behavior.Outcome) bool { return o.Verdict == behavior.Forward || o.DecidedBy != "" }
	outside := summarize(w.walk(pkt(probes.Outside, Prerouting), verdictOnly), nil)
	if passes(outside) {
		return nil, ""
	}
	var allowed []string
	for _, c := range cands {
		if c.IsSingleIP() {
			continue // a hairpin rule for one address, not a range
		}
		h, ok := space.FreeHost(c)
		if !ok {
			continue
		}
		if passes(summarize(w.walk(pkt(h, Prerouting), verdictOnly), nil)) {
			allowed = append(allowed, c.String())
		}
	}
	if len(allowed) == 0 {
		return nil, ""
	}
	return allowed, outside.Verdict
}

// summarize turns the branches of one walk into an outcome; describe (nil:
// the rules are not wanted, only the verdict) describes the hops kept.
func summarize(br []Branch, describe func(Hop) HopInfo) behavior.Outcome {
	sm := summary{n: len(br), describe: describe}
	for i := range br {
		sm.add(&br[i])
	}
	if len(sm.missing) > 0 && len(sm.backends) > 0 {
		// Some of the traffic reaches backends the input shows, the
		// rest goes on where it does not look: that share's backends
		// are unknown, and so it is listed as one.
		for i := range br {
			if b := &br[i]; b.Missing != "" && !b.MissingEndpoint && b.DNAT == "" {
				sm.addBackend("? not known ("+b.Missing+" goes on in rules the input does not show)", b)
			}
		}
	}
	sm.decide(br)
	return sm.o
}

// MissingLabel names a backend behind an endpoint chain the input does
// not hold: by the address a comment gives, else by the chain.
func MissingLabel(chain, addr string) string {
	if addr != "" {
		return addr + " (named by kube-proxy's comment; " + chain + " not in the dump)"
	}
	return "? via " + chain + " (chain not in the dump)"
}

// round removes the quantisation iptables adds to probabilities (it keeps
// them as 31-bit fixed point): 0.33333333349 becomes 1/3.
func round(p float64) float64 {
	const q = 1e6
	r := float64(int64(p*q+0.5)) / q
	for n := 2.0; n <= 1024; n++ {
		for k := 1.0; k < n; k++ {
			if v := k / n; v-r < 1e-6 && r-v < 1e-6 {
				return v
			}
		}
		if n > 12 {
			break
		}
	}
	return r
}

// hopRules describes a path's rules as its plane does (policies are no
// rules); nil describe wants none.
func hopRules(hops []Hop, describe func(Hop) HopInfo) []behavior.Rule {
	if describe == nil {
		return nil
	}
	out := make([]behavior.Rule, 0, len(hops))
	for _, h := range hops {
		if h.IsPolicy {
			continue
		}
		d := describe(h)
		out = append(out, behavior.Rule{Table: h.Table, Chain: h.Chain, Line: h.Line, Text: d.Text,
			Element: h.Element, Service: d.Service, Endpoint: d.Endpoint, Shared: d.Shared})
	}
	return out
}

// affinityOf reads ClientIP affinity off the forwarding branches.
func affinityOf(br []Branch) *behavior.Affinity {
	for _, b := range br {
		if b.DNAT != "" && b.AffinitySeconds > 0 {
			return &behavior.Affinity{TimeoutSeconds: b.AffinitySeconds}
		}
	}
	return nil
}

// sourceCandidates are the ranges the paths tested the source against,
// less the local-traffic detector's: the candidate firewall ranges.
func sourceCandidates(br []Branch, cidrs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, b := range br {
		for _, p := range b.SourcePrefixes {
			if !slices.Contains(cidrs, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func mergePrefixes(a, b []netip.Prefix) []netip.Prefix {
	seen := map[netip.Prefix]bool{}
	var out []netip.Prefix
	for _, p := range append(append([]netip.Prefix(nil), a...), b...) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// walks are one frontend's walks, remembered: its probes often repeat a
// packet (the firewall's outside probe is the external class's). With an
// AppendWalker, the branches of one frontend's walks gather in one slice,
// which the next frontend's reuse (see reset).
type walks struct {
	w    Walker
	aw   AppendWalker
	seen map[walkKey][]Branch
	buf  []Branch
	// assumed are the walks' notes (Branch.Notes: what a walker assumed
	// where the dump did not tell), each once, in the order met.
	assumed     []string
	assumedSeen map[string]bool
	// group are the notes of the walks of the group of frontends being
	// observed, each once (for an ObserveMemo).
	group []string
}

type walkKey struct {
	p Packet
	o WalkOptions
}

func newWalks(w Walker) *walks {
	ws := &walks{seen: map[walkKey][]Branch{}}
	ws.use(w)
	return ws
}

// use has the walks made with w from now on.
func (w *walks) use(wk Walker) {
	w.w = wk
	w.aw, _ = wk.(AppendWalker)
}

func (w *walks) walk(p Packet, o WalkOptions) []Branch {
	if o.Toward.IsValid() {
		// A hairpin probe, one per endpoint: never walked twice.
		return w.fresh(p, o)
	}
	k := walkKey{p, o}
	if br, ok := w.seen[k]; ok {
		return br
	}
	br := w.fresh(p, o)
	w.seen[k] = br
	return br
}

// keepNotes keeps the notes of branches walked.
func (w *walks) keepNotes(br []Branch) {
	for _, b := range br {
		w.keepTexts(b.Notes)
		for _, n := range b.Notes {
			if !slices.Contains(w.group, n) {
				w.group = append(w.group, n)
			}
		}
	}
}

// keepTexts keeps notes, each once.
func (w *walks) keepTexts(notes []string) {
	for _, n := range notes {
		if !w.assumedSeen[n] {
			if w.assumedSeen == nil {
				w.assumedSeen = map[string]bool{}
			}
			w.assumedSeen[n] = true
			w.assumed = append(w.assumed, n)
		}
	}
}

// fresh walks p.
func (w *walks) fresh(p Packet, o WalkOptions) []Branch {
	var br []Branch
	if w.aw == nil {
		br = w.w.WalkWith(p, o)
	} else {
		n := len(w.buf)
		w.buf = w.aw.AppendWalk(w.buf, p, o)
		br = w.buf[n:len(w.buf):len(w.buf)]
	}
	w.keepNotes(br)
	return br
}

// reset forgets the walks so far, for another frontend's: the branches
// they returned are not to be read after (what an outcome keeps of them is
// copied out: addresses, rules described, prefixes).
func (w *walks) reset() {
	clear(w.buf)
	w.buf = w.buf[:0]
	clear(w.seen)
}

// scope is the walker of one frontend's walks (see ScopedWalker).
func scope(w Walker) (Walker, func()) {
	if sw, ok := w.(ScopedWalker); ok {
		return sw.Scope()
	}
	return w, func() {}
}

// observeAll observes the frontends on every CPU: each frontend's walks
// are independent, and a plane's walker and Describe are safe for
// concurrent use. The frontends of one Service are observed together, in
// one scope (see ScopedWalker): they walk the same chains.
// It returns the notes of the walks (what the walker assumed), each once.
// With memo (see ObserveMemo), a group whose walks depend on nothing that
// changed takes its outcomes from it; reused counts those, of groups.
func observeAll(w Walker, describe func(Hop) HopInfo, env *Env, space behavior.ProbeSpace, keys map[behavior.Key]*behavior.Frontend, order []behavior.Key, due map[behavior.Key]*behavior.Frontend, memo *memoRun) (notes []string, reused, groups int) {
	byGroup := byService(keys, order)
	var next, taken atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(byGroup))
	perWorker := make([][]string, workers)
	for worker := range workers {
		wg.Go(func() {
			ws := newWalks(w)
			defer func() { perWorker[worker] = ws.assumed }()
			var reads []uint64
			for {
				i := int(next.Add(1)) - 1
				if i >= len(byGroup) {
					return
				}
				var key uint64
				if memo != nil {
					key = groupDigest(byGroup[i], due)
					if kept, ok := memo.take(key, byGroup[i]); ok {
						ws.keepTexts(kept)
						taken.Add(1)
						continue
					}
				}
				fw, done := scope(w)
				ws.use(fw)
				ws.group = ws.group[:0]
				for _, f := range byGroup[i] {
					observeFrontend(ws, describe, env, f, space, due[f.Key])
					ws.reset()
				}
				if sr, ok := fw.(ScopeReads); ok && memo != nil {
					reads = sr.AppendReads(reads[:0])
					memo.keep(key, byGroup[i], reads, ws.group)
				}
				done()
			}
		})
	}
	wg.Wait()
	var out []string
	for _, ns := range perWorker {
		for _, n := range ns {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out, int(taken.Load()), len(byGroup)
}

// byService groups the frontends by Service, in the order of their first
// frontend; a frontend of no known Service is a group of its own.
func byService(keys map[behavior.Key]*behavior.Frontend, order []behavior.Key) [][]*behavior.Frontend {
	var groups [][]*behavior.Frontend
	at := map[string]int{}
	for _, k := range order {
		f := keys[k]
		if f.Service == "" {
			groups = append(groups, []*behavior.Frontend{f})
			continue
		}
		if i, ok := at[f.Service]; ok {
			groups[i] = append(groups[i], f)
			continue
		}
		at[f.Service] = len(groups)
		groups = append(groups, []*behavior.Frontend{f})
	}
	return groups
}
