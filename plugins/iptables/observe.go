package iptables

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// ObserveInput is what Observe needs beyond the rules.
type ObserveInput struct {
	Node   string
	Family string
	// NodeIPs are the node's addresses (addrtype LOCAL). When empty a
	// stand-in address is used and said in a note.
	NodeIPs      []netip.Addr
	ClusterCIDRs []netip.Prefix
	// Expected frontends are walked even when no rule mentions them, so a
	// missing frontend shows as unhandled; their kinds, services and
	// source ranges name what the rules alone cannot.
	Expected []behavior.Frontend
}

// Observe walks the rules for every frontend they or the expected table
// mention and returns what the kernel does with each: the observed
// behaviour table.
func Observe(rs *Ruleset, in ObserveInput) *behavior.Table {
	t := &behavior.Table{Node: in.Node, Family: in.Family}
	nodeIPs := in.NodeIPs
	if len(nodeIPs) == 0 {
		p := behavior.ChooseProbes(nil, nil, nil)
		nodeIPs = []netip.Addr{p.Node}
		t.Notes = append(t.Notes, fmt.Sprintf("node addresses unknown: %s stands in for the node's address", p.Node))
	}
	env := &Env{LocalAddrs: nodeIPs}
	w := NewWalker(rs, env)

	keys := map[behavior.Key]*behavior.Frontend{}
	var order []behavior.Key
	add := func(f behavior.Frontend) {
		if _, ok := keys[f.Key]; ok {
			return
		}
		fc := f
		keys[f.Key] = &fc
		order = append(order, f.Key)
	}
	for _, f := range in.Expected {
		add(behavior.Frontend{Key: f.Key, Service: f.Service, SourceRanges: f.SourceRanges})
	}
	for _, f := range discover(rs, in.Expected) {
		add(f)
	}
	for _, k := range order {
		f := keys[k]
		observeFrontend(w, env, f, nodeIPs, in.ClusterCIDRs)
		t.Frontends = append(t.Frontends, *f)
	}
	for _, n := range rs.Notes {
		t.Notes = append(t.Notes, n.String())
	}
	t.Sort()
	return t
}

func observeFrontend(w *Walker, env *Env, f *behavior.Frontend, nodeIPs []netip.Addr, cidrs []netip.Prefix) {
	dst := nodeIPs[0]
	if f.Key.IP != "" {
		if a, err := netip.ParseAddr(f.Key.IP); err == nil {
			dst = a
		}
	}
	proto := strings.ToLower(f.Key.Protocol)
	pkt := func(src netip.Addr, entry Entry) Packet {
		return Packet{Src: src, Dst: dst, Protocol: proto, SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: entry}
	}
	// Firewall: which candidate ranges let a packet through, and does a
	// source outside them all get dropped?
	cands := behavior.ParsePrefixes(f.SourceRanges)
	probes := behavior.ChooseProbes(cidrs, nodeIPs, cands)
	firstWalk := w.Walk(pkt(probes.External, EntryPrerouting))
	cands = mergePrefixes(cands, sourceCandidates(firstWalk, cidrs))
	probes = behavior.ChooseProbes(cidrs, nodeIPs, cands)
	var allowed []netip.Prefix
	outside := summarize(w.Walk(pkt(probes.Outside, EntryPrerouting)))
	if len(cands) > 0 && outside.Verdict != behavior.Forward {
		for _, c := range cands {
			if c.Bits() == c.Addr().BitLen() {
				continue // a hairpin /32 rule, not a range
			}
			if summarize(w.Walk(pkt(behavior.LastHost(c), EntryPrerouting))).Verdict == behavior.Forward {
				allowed = append(allowed, c)
			}
		}
	}
	f.SourceRanges = nil
	for _, a := range allowed {
		f.SourceRanges = append(f.SourceRanges, a.String())
	}
	probes = behavior.ChooseProbes(cidrs, nodeIPs, allowed)

	f.Outcomes = map[behavior.SourceClass]behavior.Outcome{}
	for _, c := range behavior.SourceClasses {
		var br []Branch
		switch c {
		case behavior.FromPod:
			br = w.Walk(pkt(probes.Pod, EntryPrerouting))
		case behavior.FromNode:
			br = w.Walk(pkt(probes.Node, EntryOutput))
		case behavior.FromExternal:
			br = w.Walk(pkt(probes.External, EntryPrerouting))
		}
		o := summarize(br)
		f.Outcomes[c] = o
		if f.Affinity == nil {
			f.Affinity = affinityOf(br)
		}
		if f.Service == "" {
			f.Service = serviceOf(br)
		}
	}
	// Hairpin: a pod reaching itself through the frontend is masqueraded.
	o := f.Outcomes[behavior.FromPod]
	for i, b := range o.Backends {
		host, _ := splitHostPort(b.Endpoint)
		a, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		for _, br := range w.Walk(pkt(a, EntryPrerouting)) {
			if br.DNAT == b.Endpoint && br.Masquerade {
				o.Backends[i].HairpinMasquerade = true
			}
		}
	}
	f.Outcomes[behavior.FromPod] = o
}

// summarize turns the branches of one walk into an outcome.
func summarize(br []Branch) behavior.Outcome {
	var o behavior.Outcome
	backends := map[string]*behavior.Backend{}
	var order []string
	var dropP, rejectP float64
	masq := false
	addBackend := func(ep string, b Branch) {
		bk, ok := backends[ep]
		if !ok {
			bk = &behavior.Backend{Endpoint: ep, Rules: hopTexts(b.Hops)}
			backends[ep] = bk
			order = append(order, ep)
		}
		bk.Probability += b.Probability
	}
	for _, b := range br {
		switch {
		case b.DNAT != "":
			addBackend(b.DNAT, b)
			if b.Masquerade {
				masq = true
			}
		case b.Missing != "":
			addBackend("? via "+b.Missing+" (chain not in the dump)", b)
		case b.Redirect != "":
			addBackend("local:"+b.Redirect+" (userspace proxy)", b)
		case b.Verdict == VerdictReject:
			rejectP += b.Probability
			o.Reason, o.Rules = b.Reason, hopTexts(b.Hops)
		case b.Verdict == VerdictDrop:
			dropP += b.Probability
			if o.Reason == "" || rejectP == 0 {
				o.Reason, o.Rules = b.Reason, hopTexts(b.Hops)
			}
		}
	}
	switch {
	case len(order) > 0:
		o.Verdict = behavior.Forward
		o.Reason, o.Rules = "", nil
		for _, ep := range order {
			b := *backends[ep]
			b.Probability = round(b.Probability)
			o.Backends = append(o.Backends, b)
		}
		o.Masquerade = masq
	case rejectP > 0:
		o.Verdict = behavior.Reject
	case dropP > 0:
		o.Verdict = behavior.Drop
	default:
		o.Verdict = behavior.Unhandled
		if len(br) > 0 {
			o.Rules = hopTexts(br[0].Hops)
		}
	}
	return o
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

func hopTexts(hops []Hop) []string {
	out := make([]string, 0, len(hops))
	for _, h := range hops {
		if h.Rule != nil {
			out = append(out, h.Table+": "+h.Rule.Raw)
		}
	}
	return out
}

// affinityOf reads ClientIP affinity off forwarding branches: the branch
// adds its source to a recent list that an earlier rcheck on the path
// consults.
func affinityOf(br []Branch) *behavior.Affinity {
	for _, b := range br {
		if b.DNAT == "" {
			continue
		}
		for _, set := range b.RecentSet {
			if secs, ok := b.RecentChecked[set]; ok {
				return &behavior.Affinity{TimeoutSeconds: int32(secs)}
			}
		}
	}
	return nil
}

// serviceOf names the service from kube-proxy's comments on the path.
func serviceOf(br []Branch) string {
	for _, b := range br {
		for _, h := range b.Hops {
			if h.Rule == nil {
				continue
			}
			if spn, ok := SPNFromComment(h.Rule.Comment()); ok {
				return spn
			}
		}
	}
	return ""
}

func sourceCandidates(br []Branch, cidrs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	seen := map[*Rule]bool{}
	for _, b := range br {
		for _, h := range b.Hops {
			if h.Rule == nil {
				continue
			}
			c := h.chain
			if c == nil || seen[h.Rule] {
				continue
			}
			seen[h.Rule] = true
			for _, r := range c.Rules {
				if r.Source != nil && !r.Source.Negate && !inPrefixes(r.Source.Prefix, cidrs) {
					out = append(out, r.Source.Prefix)
				}
			}
		}
	}
	return out
}

func inPrefixes(p netip.Prefix, ps []netip.Prefix) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
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
