package iptables

// A node's walks run kube-proxy's postrouting and forwarding chains once
// per branch: at 10,000 Services, nearly half of every rule the walks
// evaluate. Those chains test only the packet's mark and connection state
// and set only the mark, masquerading and a verdict, so their outcome for
// a given mark and state is the same on every branch: a walk that records
// no hops takes it from the chain's memo (memoized) after the first.

// memoOutcome is what a pure chain did to a packet of a given mark and
// state (in): the flow it left the chain by, and its mark, masquerading
// and verdict after.
type memoOutcome struct {
	in              memoIn
	flow            flow
	mark            uint32
	masq            bool
	verdict, reason string
}

// memoIn is what a pure chain's rules read of a packet.
type memoIn struct {
	mark             uint32
	translated, masq bool
}

// pure reports whether the chain reads nothing of a packet but its mark
// and connection state and changes nothing but its mark, masquerading
// and verdict, through every chain it jumps to: then its outcome depends
// on those alone. It is worked out once per chain. A per-Service chain is
// never pure (its rules test addresses), and is not read for it.
func (c *Chain) pure() bool {
	if oneService(c) {
		return false
	}
	w := c.work()
	w.pureOnce.Do(func() { w.isPure = pureChain(c, 0) })
	return w.isPure
}

// oneService reports whether c is one Service's chain, by its name or as
// its read has it.
func oneService(c *Chain) bool {
	return perServiceChain(c.Name) || (c.lazy != nil && c.lazy.transient)
}

func pureChain(c *Chain, depth int) bool {
	if depth > 8 || oneService(c) || c.lazyIndexed() {
		// A long chain of a lazy read is walked through its index,
		// not parsed whole to prove it pure.
		return false
	}
	for _, r := range c.Rules() {
		if !pureRule(r, depth) {
			return false
		}
	}
	return true
}

// pureRule: no address, interface, protocol or fragment test, no match
// but comments, counters, marks and connection states, and a target that
// ends the packet, marks it, masquerades it or jumps to a pure chain.
func pureRule(r *Rule, depth int) bool {
	if r.Source != nil || r.Dest != nil || r.InIface != nil || r.OutIface != nil || r.Protocol != nil || r.Fragment != nil || len(r.Unknown) > 0 {
		return false
	}
	for i := range r.Matches {
		m := &r.Matches[i]
		switch m.Module {
		case "comment", "nfacct":
		case "mark":
			if o, ok := m.Option("mark"); ok && len(o.Args) > 0 {
				if _, _, ok := parseMark(o.Args[0]); !ok {
					return false
				}
			}
		case "conntrack", "state":
			for _, o := range m.Options {
				if o.Name != "ctstate" && o.Name != "state" {
					return false
				}
			}
		default:
			return false
		}
	}
	switch r.Target {
	case "", "ACCEPT", "DROP", "REJECT", "RETURN", "MASQUERADE", "LOG", "NFLOG":
		return true
	case "MARK":
		for _, o := range r.TargetOptions {
			if len(o.Args) == 0 {
				continue
			}
			if _, _, ok := parseMark(o.Args[0]); !ok {
				return false
			}
		}
		return true
	}
	// A jump or goto to a chain of the table (anything else, an unknown
	// target, is not pure).
	return r.jump != nil && pureChain(r.jump, depth+1)
}

// memoized evaluates a pure chain, or takes its outcome from the chain's
// memo: a walk that records no hops has nothing else to show for it. An
// outcome is kept only when the chain left the branch whole (no fork, no
// note). The memo is a short list (a chain meets a few marks), replaced
// whole when it grows: reads take no lock.
func (w *Walker) memoized(s *state, table string, c *Chain, depth int) []result {
	in := memoIn{mark: s.mark, translated: s.translated, masq: s.masq}
	work := c.work()
	if list := work.outcomes.Load(); list != nil {
		for _, o := range *list {
			if o.in == in {
				s.mark, s.masq = o.mark, o.masq
				if o.verdict != "" {
					s.verdict, s.reason = o.verdict, o.reason
				}
				return s.one(o.flow)
			}
		}
	}
	rare, notes := s.rare, 0
	if rare != nil {
		notes = len(rare.notes)
	}
	rules := c.Rules()
	if idx := c.index(); idx != nil {
		rules = idx.rulesFor(s.pkt.Dst)
	}
	res := w.evalRules(s, table, c, rules, depth)
	if len(res) == 1 && res[0].st == s && s.rare == rare && (rare == nil || len(rare.notes) == notes) {
		o := memoOutcome{in: in, flow: res[0].flow, mark: s.mark, masq: s.masq, verdict: s.verdict, reason: s.reason}
		for {
			old := work.outcomes.Load()
			var list []memoOutcome
			if old != nil {
				if len(*old) >= maxOutcomes {
					break
				}
				list = append(list, *old...)
			}
			list = append(list, o)
			if work.outcomes.CompareAndSwap(old, &list) {
				break
			}
		}
	}
	return res
}

// maxOutcomes bounds a chain's memo: past it, a chain that meets many
// marks is evaluated each time.
const maxOutcomes = 16
