package iptables

import (
	"net/netip"

	"github.com/svctrace/svctrace/dataplane"
)

// A walk narrowed to one backend (WalkOptions.Toward: the hairpin probe of
// each endpoint) drops every branch that is translated to another one, at
// its DNAT. At a statistic rule whose chain surely does that, the branch
// that takes the rule need not be forked and walked: it would leave
// nothing. kube-proxy's endpoint chains have that shape: a hairpin mark,
// then the DNAT to the endpoint.

// elsewhere reports whether a branch that jumps to c is surely translated
// to another destination than the walk's Toward, so that it ends there.
func (w *Walker) elsewhere(s *state, c *Chain) bool {
	if !s.opts.Toward.IsValid() {
		return false
	}
	d := c.surelyTranslates(s)
	if d == nil || !d.matches(s.pkt) {
		return false
	}
	port := d.dnat.portNum
	if port == 0 {
		port = s.pkt.DstPort
	}
	return !s.opts.Keeps(netip.AddrPortFrom(d.dnat.addr, port))
}

// translation is a chain's last rule when every packet of its protocol
// (any, for none) that enters the chain reaches it and is translated to
// dnat: see surelyTranslates.
type translation struct {
	protocol string
	dnat     dnatFact
}

func (t *translation) matches(p dataplane.Packet) bool {
	return t.protocol == "" || t.protocol == "all" || t.protocol == p.Protocol
}

// surelyTranslates is the chain's translation, or nil when the chain may
// do anything else with a packet: its last rule is a DNAT to an address
// that matches on the protocol at most, and every rule before it lets the
// packet go on (sets a mark, or jumps to a chain that only does that).
// It is worked out on first use, from the rules as s reads them, and kept.
func (c *Chain) surelyTranslates(s *state) *translation {
	w := c.work()
	w.transOnce.Do(func() {
		rules := s.rules(c)
		if len(rules) == 0 {
			return
		}
		last := rules[len(rules)-1]
		proto, ok := protocolOnly(last)
		if !ok || last.Target != "DNAT" || last.facts == nil || !last.facts.dnat.addr.IsValid() {
			return
		}
		for _, r := range rules[:len(rules)-1] {
			if !passesOn(s, r, 0) {
				return
			}
		}
		w.trans = &translation{protocol: proto, dnat: last.facts.dnat}
	})
	return w.trans
}

// protocolOnly reports whether r matches on nothing but its protocol (and
// comments, and its protocol's match module without options), and which.
func protocolOnly(r *Rule) (string, bool) {
	if r.Source != nil || r.Dest != nil || r.InIface != nil || r.OutIface != nil || r.Fragment != nil || len(r.Unknown) > 0 {
		return "", false
	}
	proto := ""
	if r.Protocol != nil {
		if r.Protocol.Negate {
			return "", false
		}
		proto = r.Protocol.Name
	}
	for _, m := range r.Matches {
		switch {
		case m.Module == "comment":
		case m.Known && len(m.Options) == 0 && m.Module == proto && (proto == "tcp" || proto == "udp" || proto == "sctp"):
		default:
			return "", false
		}
	}
	return proto, true
}

// passesOn reports whether a packet surely goes on to the next rule after
// r, whether r matches or not: r marks it, or jumps to a chain whose rules
// all do that (or return).
func passesOn(s *state, r *Rule, depth int) bool {
	switch r.Target {
	case "MARK", "LOG", "NFLOG":
		return true
	case "":
		return true
	}
	if r.jump == nil || r.Goto || depth > 4 {
		return false
	}
	for _, sub := range s.rules(r.jump) {
		if sub.Target != "RETURN" && !passesOn(s, sub, depth+1) {
			return false
		}
	}
	return true
}
