package iptables

import (
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
)

// recordRecentSets keeps, on the branch, the names of the recent lists
// the rule's "-m recent --set" matches add the packet's source to.
func recordRecentSets(s *state, r *Rule) {
	for _, m := range r.Matches {
		if m.Module == "recent" {
			if _, ok := m.Option("set"); ok {
				if o, ok := m.Option("name"); ok && len(o.Args) > 0 {
					rare := s.setRare()
					rare.recentSet = append(rare.recentSet, o.Args[0])
				}
			}
		}
	}
}

// applyTarget applies a rule whose target is no chain: a verdict, a
// translation or a target that lets the packet go on. ok is false for a
// jump to a chain.
func (w *Walker) applyTarget(s *state, table string, c *Chain, r *Rule) (res []result, ok bool) {
	switch r.Target {
	case "":
		return s.one(flowEnd), true
	case "ACCEPT":
		return s.one(flowStop), true
	case "DROP":
		s.verdict, s.reason = string(dataplane.Drop), verdictReason(table, c, r)
		if s.rare != nil && s.rare.dropWhy != "" && (c.Name == "KUBE-MARK-DROP" || c.Name == "KUBE-FIREWALL") {
			s.reason = s.rare.dropWhy
		}
		s.decided(ruleOwner(table, c.Name, r))
		return s.one(flowVerdict), true
	case "REJECT":
		s.verdict, s.reason = string(dataplane.Reject), verdictReason(table, c, r)
		s.decided(ruleOwner(table, c.Name, r))
		return s.one(flowVerdict), true
	case "RETURN":
		return s.one(flowReturn), true
	case "DNAT":
		w.dnat(s, r)
		if by := ruleOwner(table, c.Name, r); by != "" {
			// Another component's DNAT (a hostPort's) takes the
			// packet before kube-proxy's rules see it.
			s.setRare().decidedBy = by
		}
		if !s.opts.Keeps(netip.AddrPortFrom(s.pkt.Dst, s.pkt.DstPort)) {
			return nil, true // another backend than the one asked about
		}
		return s.one(flowStop), true
	case "REDIRECT":
		o, _ := r.TargetOption("to-ports")
		if len(o.Args) > 0 {
			s.setRare().redirect = o.Args[0]
		}
		s.verdict = string(dataplane.Redirect)
		return s.one(flowVerdict), true
	case "MASQUERADE", "SNAT":
		s.masq = true
		if !ProxyChain(r.Chain) && !isBuiltinChain(r.Chain) {
			s.setRare().masqBy = table + " " + r.Chain
		}
		return s.one(flowStop), true
	case "MARK":
		w.mark(s, r)
		return s.one(flowEnd), true
	case "LOG", "NFLOG", "TRACE", "CONNMARK", "CT", "NOTRACK", "NFQUEUE", "AUDIT":
		return s.one(flowEnd), true
	}
	return nil, false
}

// jumpTarget returns the chain a rule jumps to, nil when the ruleset does
// not show it.
func (w *Walker) jumpTarget(s *state, table string, r *Rule) *Chain {
	target := r.jump
	if target == nil {
		target = w.rs.Chain(table, r.Target)
	}
	if t, ok := w.tails[table+"/"+r.Target]; ok {
		s.note("%s", t.note)
		target = t.chain
	}
	if target != nil && w.rs.Excerpt != "" && len(target.Rules()) == 0 && !isBuiltinChain(target.Name) {
		// An excerpt that declares a chain and shows none of its rules
		// (a grep keeps the declaration lines it matched) does not
		// prove the chain empty: its rules were left out.
		target = nil
	}
	if target == nil {
		if target = w.assumed(table, r.Target); target != nil {
			s.note("%s", assumedNote(target))
		}
	}
	return target
}

// missingTarget ends the branch of a rule whose target is neither known
// nor a chain the ruleset shows.
func missingTarget(s *state, table string, r *Rule) []result {
	if strings.HasPrefix(r.Target, "KUBE-") {
		// Only an excerpt can jump to a chain it does not hold (the
		// kernel refuses such a rule): the branch ends there.
		s.verdict, s.setRare().missing = string(dataplane.Missing), r.Target
		if _, ep, ok := strings.Cut(r.Comment(), " -> "); ok && strings.HasPrefix(r.Target, PrefixSEP) {
			// 1.24 on, the jump to an endpoint's chain names it.
			s.rare.missingAddr = ep
		}
		return s.one(flowVerdict)
	}
	s.note("%s: target %s is neither a known target nor a chain of table %s; ignored", r.Ref(), r.Target, table)
	return s.one(flowEnd)
}

// jumpResults turns the results of a jumped-to chain into the jumping
// rule's: the end of the chain, or a RETURN from it, goes on after the
// rule (after the chain that called it, for a goto).
func jumpResults(res []result, isGoto bool) []result {
	if len(res) == 1 {
		// As below, in place: res is the branch's only result.
		switch res[0].flow {
		case flowEnd, flowReturn:
			res[0].flow = flowEnd
			if isGoto {
				res[0].flow = flowReturn
			}
		}
		return res
	}
	// Several results are a slice of their own: rewritten in place.
	for i := range res {
		switch res[i].flow {
		case flowEnd, flowReturn:
			res[i].flow = flowEnd
			if isGoto {
				// A goto returns to the caller of this chain.
				res[i].flow = flowReturn
			}
		}
	}
	return res
}
