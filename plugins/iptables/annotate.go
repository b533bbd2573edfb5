package iptables

import (
	"cmp"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// sharedChains are the chains every path goes through, whatever the
// Service: the jumps from the built-in chains and the masquerade plumbing.
var sharedChains = map[string]bool{
	"PREROUTING": true, "OUTPUT": true, "POSTROUTING": true, "KUBE-POSTROUTING": true, "KUBE-MARK-MASQ": true,
}

// Describe tells what a hop is for readers that know no iptables: the rule
// as shown, its Service (kube-proxy's comment), the endpoint its chain leads
// to, and whether it is shared plumbing (the filter passes included).
func (p *Plane) Describe(h dataplane.Hop) dataplane.HopInfo {
	d := dataplane.HopInfo{ByLine: true}
	if h.IsPolicy {
		d.Shared = true // a chain's policy is no Service's
		return d
	}
	d.Text = h.Table + ": " + h.Rule
	if h.Element != "" {
		d.Text += "  [" + h.Element + "]"
	}
	d.Shared = h.Table == "filter" || sharedChains[h.Chain]
	if r := p.ruleAt(h); r != nil {
		if spn, ok := SPNFromComment(r.Comment()); ok {
			d.Service = spn
		}
		// "ns/name:port -> 10.244.1.10:8080" picks an endpoint's chain.
		if _, ep, ok := strings.Cut(r.Comment(), " -> "); ok {
			d.Endpoint = ep
		}
	}
	if strings.HasPrefix(h.Chain, PrefixSEP) {
		// Every rule of an endpoint's chain leads to the endpoint its
		// DNAT rule names.
		if c := p.Rules.Chain(h.Table, h.Chain); c != nil {
			d.Endpoint = dnatTarget(c)
		}
	}
	return d
}

// ruleAt finds a hop's rule in its chain by its line: a chain's rules come
// in the order of their lines (a long chain such as KUBE-SERVICES is
// searched, not scanned); an out-of-order chain is scanned.
func (p *Plane) ruleAt(h dataplane.Hop) *Rule {
	c := p.Rules.Chain(h.Table, h.Chain)
	if c == nil {
		return nil
	}
	if r, ok := c.lazyRuleAt(h.Line); ok {
		return r
	}
	rules := c.Rules()
	if i, ok := slices.BinarySearchFunc(rules, h.Line, func(r *Rule, line int) int { return cmp.Compare(r.Line, line) }); ok {
		return rules[i]
	}
	for _, r := range rules {
		if r.Line == h.Line {
			return r
		}
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
