package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// matchResult is the chance a rule matches the packet: 0 no, 1 yes, in
// between for a statistic match.
type matchResult struct{ prob float64 }

var (
	noMatch  = matchResult{0}
	hasMatch = matchResult{1}
)

// matches evaluates every match of a rule against the packet on a branch.
// What cannot be evaluated is assumed not to match (or, when negated, to
// match) and said in a note on the branch.
func (w *Walker) matches(s *state, r *Rule) matchResult {
	p := s.pkt
	if r.Source != nil {
		if r.Source.Redacted != "" {
			s.note("%s: source %s is redacted; taken as not matching (negated: as matching)", r.Ref(), r.Source.Redacted)
			if !r.Source.Negate {
				return noMatch
			}
		} else if !s.opts.NoSourcePrefixes {
			s.srcTests = append(s.srcTests, r.Source.Prefix)
		}
		if r.Source.Prefix.Contains(p.Src) == r.Source.Negate {
			return noMatch
		}
	}
	if r.Dest != nil && r.Dest.Redacted != "" {
		s.note("%s: destination %s is redacted; taken as not matching (negated: as matching)", r.Ref(), r.Dest.Redacted)
	}
	if r.Dest != nil && r.Dest.Prefix.Contains(p.Dst) == r.Dest.Negate {
		return noMatch
	}
	if r.Protocol != nil {
		name := r.Protocol.Name
		ok := name == "all" || name == "0" || name == p.Protocol
		if ok == r.Protocol.Negate {
			return noMatch
		}
	}
	if r.InIface != nil && !ifaceMatch(s, r, r.InIface, p.InIface) {
		return noMatch
	}
	if r.OutIface != nil && !ifaceMatch(s, r, r.OutIface, "") {
		return noMatch
	}
	if r.Fragment != nil && *r.Fragment {
		return noMatch // a first packet is never a non-first fragment
	}
	prob := 1.0
	for i := range r.Matches {
		m := &r.Matches[i]
		res := w.module(s, r, m)
		if res.prob == 0 {
			return noMatch
		}
		prob *= res.prob
	}
	return matchResult{prob}
}

func ifaceMatch(s *state, r *Rule, m *IfaceMatch, iface string) bool {
	if iface == "" {
		s.note("%s: interface match %q not evaluated (interface unknown); assumed not to match", r.Ref(), m.Name)
		return m.Negate
	}
	var ok bool
	if strings.HasSuffix(m.Name, "+") {
		ok = strings.HasPrefix(iface, strings.TrimSuffix(m.Name, "+"))
	} else {
		ok = iface == m.Name
	}
	return ok != m.Negate
}

func (w *Walker) module(s *state, r *Rule, m *Match) matchResult {
	switch m.Module {
	case "comment", "nfacct", "limit":
		return hasMatch
	case "tcp", "udp", "sctp":
		return portsMatch(s, r, m)
	case "multiport":
		return multiportMatch(s, m)
	case "statistic":
		return statistic(s, r, m)
	case "recent":
		return w.recent(s, m)
	case "set":
		return w.set(s, r, m)
	case "ipvs":
		return w.ipvs(s, r, m)
	case "addrtype":
		return w.addrTypeMatch(s, r, m)
	case "conntrack", "state":
		return ctStateMatch(s, r, m)
	case "mark":
		return markMatch(s, r, m)
	case "physdev":
		return physdev(s, r, m)
	case "icmp", "icmp6", "icmpv6":
		if p := &s.pkt; p.Protocol != "icmp" && p.Protocol != "ipv6-icmp" {
			return noMatch
		}
		return hasMatch
	}
	s.note("%s: match -m %s not evaluated; assumed not to match", r.Ref(), m.Module)
	return noMatch
}

func statistic(s *state, r *Rule, m *Match) matchResult {
	var st statFact
	if f := r.facts; f != nil && f.stat.set && &r.Matches[f.stat.match] == m {
		st = f.stat
	} else {
		st = readStatistic(m)
	}
	if st.bad != "" {
		s.note("%s: %s", r.Ref(), st.bad)
		return noMatch
	}
	return matchResult{st.prob}
}

// ruleFacts are a rule's statistic match (its first) and DNAT target,
// read when it is parsed: walks of a large node evaluate such a rule
// millions of times.
type ruleFacts struct {
	stat statFact
	dnat dnatFact
}

// statFact is what a -m statistic match gives a walk: its probability,
// or why it cannot be read (bad).
type statFact struct {
	prob  float64
	bad   string
	match int
	set   bool
}

// readStatistic reads a -m statistic match.
func readStatistic(m *Match) statFact {
	mode, _ := m.Option("mode")
	if len(mode.Args) > 0 && mode.Args[0] == "nth" {
		every, ok := m.Option("every")
		n, err := strconv.Atoi(strings.Join(every.Args, ""))
		if !ok || err != nil || n <= 0 {
			return statFact{bad: "statistic nth without a valid --every"}
		}
		return statFact{prob: 1 / float64(n)}
	}
	o, ok := m.Option("probability")
	if !ok || len(o.Args) == 0 {
		return statFact{prob: 1}
	}
	v, err := strconv.ParseFloat(o.Args[0], 64)
	if err != nil || v < 0 || v > 1 {
		return statFact{bad: fmt.Sprintf("statistic probability %q unreadable; assumed 0", o.Args[0])}
	}
	if o.Negate {
		v = 1 - v
	}
	return statFact{prob: v}
}

// recent evaluates -m recent. --set always matches (and is recorded when
// the target runs); --rcheck/--update match only for a source already in
// the list (Env.Sticky).
func (w *Walker) recent(s *state, m *Match) matchResult {
	name := "DEFAULT"
	if o, ok := m.Option("name"); ok && len(o.Args) > 0 {
		name = o.Args[0]
	}
	_, rcheck := m.Option("rcheck")
	_, update := m.Option("update")
	if !rcheck && !update {
		return hasMatch
	}
	secs := 0
	if o, ok := m.Option("seconds"); ok && len(o.Args) > 0 {
		secs, _ = strconv.Atoi(o.Args[0])
	}
	rare := s.setRare()
	if rare.recentChecked == nil {
		rare.recentChecked = map[string]int{}
	}
	rare.recentChecked[name] = secs
	if w.env.Sticky[name] {
		return hasMatch
	}
	return noMatch
}

func (w *Walker) addrType(s *state, r *Rule, a netip.Addr, typ string) bool {
	local := w.env.IsLocal(a)
	for _, t := range strings.Split(typ, ",") {
		switch strings.ToUpper(t) {
		case "LOCAL":
			if local {
				return true
			}
		case "UNICAST":
			if !local && !a.IsMulticast() {
				return true
			}
		case "MULTICAST":
			if a.IsMulticast() {
				return true
			}
		case "BROADCAST", "ANYCAST", "BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE", "UNSPEC":
		default:
			s.note("%s: addrtype %s not known", r.Ref(), t)
		}
	}
	return false
}

// ctState: a walked packet is the first of a new connection; after DNAT
// its conntrack entry also has the DNAT status.
func ctState(s *state, states string) bool {
	for rest := states; rest != ""; {
		var st string
		st, rest, _ = strings.Cut(rest, ",")
		switch strings.ToUpper(st) {
		case "NEW":
			return true
		case "DNAT":
			if s.translated {
				return true
			}
		case "SNAT":
			if s.masq {
				return true
			}
		}
	}
	return false
}

func portIn(spec string, v uint16) bool {
	lo, hi, ok := portRange(spec)
	return ok && v >= lo && v <= hi
}

func portList(spec string, v uint16) bool {
	for rest := spec; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ",")
		if portIn(p, v) {
			return true
		}
	}
	return false
}

func portRange(spec string) (uint16, uint16, bool) {
	a, b, found := strings.Cut(spec, ":")
	lo, err := strconv.ParseUint(a, 10, 16)
	if err != nil {
		if a != "" || !found {
			return 0, 0, false
		}
		lo = 0
	}
	if !found {
		return uint16(lo), uint16(lo), true
	}
	hi := uint64(65535)
	if b != "" {
		if hi, err = strconv.ParseUint(b, 10, 16); err != nil {
			return 0, 0, false
		}
	}
	return uint16(lo), uint16(hi), true
}

// parseMark reads "0x4000/0x4000" or "0x4000" (mask all ones).
func parseMark(s string) (value, mask uint32, ok bool) {
	v, m, hasMask := strings.Cut(s, "/")
	vv, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	mask = 0xffffffff
	if hasMask {
		mm, err := strconv.ParseUint(m, 0, 32)
		if err != nil {
			return 0, 0, false
		}
		mask = uint32(mm)
	}
	return uint32(vv), mask, true
}

// dstIndex is a chain's rule positions by destination: positions whose
// rule matches one exact destination address are only candidates for
// packets to that address; the rest are candidates for every packet.
type dstIndex struct {
	byDst map[netip.Addr][]int
	any   []int
}

// add files position i under dst, or under every packet without one.
func (x *dstIndex) add(i int, dst netip.Addr, exact bool) {
	if !exact {
		x.any = append(x.any, i)
		return
	}
	if x.byDst == nil {
		x.byDst = map[netip.Addr][]int{}
	}
	x.byDst[dst] = append(x.byDst[dst], i)
}

// candidates walks the positions of the candidates for a packet to dst,
// in order.
func (x *dstIndex) candidates(dst netip.Addr) dstCursor {
	return dstCursor{a: x.byDst[dst], b: x.any}
}

// dstCursor merges a destination's positions with those of every packet.
type dstCursor struct{ a, b []int }

// len is the number of positions left.
func (c *dstCursor) len() int { return len(c.a) + len(c.b) }

// next is the next position, false past the last.
func (c *dstCursor) next() (int, bool) {
	var i int
	switch {
	case len(c.a) == 0 && len(c.b) == 0:
		return 0, false
	case len(c.b) == 0 || (len(c.a) > 0 && c.a[0] < c.b[0]):
		i, c.a = c.a[0], c.a[1:]
	default:
		i, c.b = c.b[0], c.b[1:]
	}
	return i, true
}

// chainIndex speeds up a long chain of parsed rules (see dstIndex). Order
// is kept.
type chainIndex struct {
	dstIndex
	rules []*Rule
}

func buildIndex(rules []*Rule) *chainIndex {
	idx := &chainIndex{rules: rules}
	for i, r := range rules {
		exact := r.Dest != nil && !r.Dest.Negate && r.Dest.Prefix.IsSingleIP()
		var a netip.Addr
		if exact {
			a = r.Dest.Prefix.Addr()
		}
		idx.add(i, a, exact)
	}
	return idx
}

func (idx *chainIndex) rulesFor(dst netip.Addr) []*Rule {
	c := idx.candidates(dst)
	out := make([]*Rule, 0, c.len())
	for i, ok := c.next(); ok; i, ok = c.next() {
		out = append(out, idx.rules[i])
	}
	return out
}
