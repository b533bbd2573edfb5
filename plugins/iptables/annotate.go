package iptables

import (
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// sharedChains are the chains every path goes through, whatever the
// Service: the jumps from the built-in chains and the masquerade plumbing.
var sharedChains = map[string]bool{
	"PREROUTING": true, "OUTPUT": true, "POSTROUTING": true, "KUBE-POSTROUTING": true, "KUBE-MARK-MASQ": true,
}

// annotated describes every hop of its walker's branches for readers that
// know no iptables: the rule as shown, its Service (kube-proxy's comment)
// and whether it is shared plumbing (the filter passes included).
type annotated struct {
	w *Walker
	// byLine finds a hop's rule: lines are unique in a dump, and a long
	// chain (KUBE-SERVICES) must not be scanned for every hop.
	byLine map[int]*Rule
}

func newAnnotated(w *Walker, rs *Ruleset) annotated {
	a := annotated{w: w, byLine: map[int]*Rule{}}
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				a.byLine[r.Line] = r
			}
		}
	}
	return a
}

func (a annotated) Walk(p dataplane.Packet) []dataplane.Branch {
	br := a.w.Walk(p)
	for i := range br {
		for j := range br[i].Hops {
			a.describe(&br[i].Hops[j])
		}
	}
	return br
}

func (a annotated) describe(h *dataplane.Hop) {
	h.ByLine = true
	if h.IsPolicy {
		h.Shared = true // a chain's policy is no Service's
		return
	}
	h.Text = h.Table + ": " + h.Rule
	if h.Element != "" {
		h.Text += "  [" + h.Element + "]"
	}
	h.Shared = h.Table == "filter" || sharedChains[h.Chain]
	if r := a.rule(h); r != nil {
		if spn, ok := SPNFromComment(r.Comment()); ok {
			h.Service = spn
		}
		// "ns/name:port -> 10.244.1.10:8080" picks an endpoint's chain.
		if _, ep, ok := strings.Cut(r.Comment(), " -> "); ok {
			h.Endpoint = ep
		}
	}
	if strings.HasPrefix(h.Chain, PrefixSEP) {
		// Every rule of an endpoint's chain leads to the endpoint its
		// DNAT rule names.
		if c := a.w.rs.Chain(h.Table, h.Chain); c != nil {
			h.Endpoint = dnatTarget(c)
		}
	}
}

// rule finds the hop's rule by its line (a rule of another chain on the
// same line would be an excerpt's merge: then none).
func (a annotated) rule(h *dataplane.Hop) *Rule {
	if r := a.byLine[h.Line]; r != nil && r.Chain == h.Chain {
		return r
	}
	return nil
}

// OwnsRule reports whether a rule is of one of the Service ports spns:
// named by kube-proxy's comment, or on the way through one of their
// per-service chains, whose names are hashes of the port name and the
// protocol (the protocol unknown here: every one is tried).
func (p *Plane) OwnsRule(r behavior.Rule, spns []string) bool {
	for _, spn := range spns {
		if r.Service == spn {
			return true
		}
		for _, proto := range []string{"tcp", "udp", "sctp"} {
			h := ServiceChainHash(spn, proto)
			for _, prefix := range []string{PrefixSVC, PrefixSVL, PrefixEXT, PrefixFW} {
				if strings.Contains(r.Text, prefix+h) {
					return true
				}
			}
		}
	}
	return false
}
