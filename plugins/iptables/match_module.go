package iptables

import "net/netip"

// portsMatch evaluates a tcp, udp or sctp match: the protocol and its
// ports.
func portsMatch(s *state, r *Rule, m *Match) matchResult {
	p := &s.pkt
	if p.Protocol != m.Module {
		return noMatch
	}
	for _, o := range m.Options {
		var v uint16
		switch o.Name {
		case "dport":
			v = p.DstPort
		case "sport":
			v = p.SrcPort
		case "syn", "tcp-flags":
			continue // the first packet of a connection is a SYN
		default:
			s.note("%s: %s option --%s not evaluated; assumed to match", r.Ref(), m.Module, o.Name)
			continue
		}
		if len(o.Args) == 0 || portIn(o.Args[0], v) == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

// multiportMatch evaluates a multiport match.
func multiportMatch(s *state, m *Match) matchResult {
	p := &s.pkt
	for _, o := range m.Options {
		if len(o.Args) == 0 {
			continue
		}
		var ok bool
		switch o.Name {
		case "dports", "destination-ports":
			ok = portList(o.Args[0], p.DstPort)
		case "sports", "source-ports":
			ok = portList(o.Args[0], p.SrcPort)
		case "ports":
			ok = portList(o.Args[0], p.DstPort) || portList(o.Args[0], p.SrcPort)
		}
		if ok == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

// addrTypeMatch evaluates an addrtype match's --src-type and --dst-type.
func (w *Walker) addrTypeMatch(s *state, r *Rule, m *Match) matchResult {
	for _, o := range m.Options {
		var a netip.Addr
		switch o.Name {
		case "src-type":
			a = s.pkt.Src
		case "dst-type":
			a = s.pkt.Dst
		default:
			continue
		}
		if len(o.Args) == 0 || w.addrType(s, r, a, o.Args[0]) == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

// ctStateMatch evaluates a conntrack or state match's states.
func ctStateMatch(s *state, r *Rule, m *Match) matchResult {
	for _, o := range m.Options {
		if o.Name != "ctstate" && o.Name != "state" {
			s.note("%s: conntrack option --%s not evaluated; assumed to match", r.Ref(), o.Name)
			continue
		}
		if len(o.Args) == 0 || ctState(s, o.Args[0]) == o.Negate {
			return noMatch
		}
	}
	return hasMatch
}

// markMatch evaluates a mark match against the packet's mark.
func markMatch(s *state, r *Rule, m *Match) matchResult {
	o, ok := m.Option("mark")
	if !ok || len(o.Args) == 0 {
		return hasMatch
	}
	v, mask, ok := parseMark(o.Args[0])
	if !ok {
		s.note("%s: cannot read mark %q; assumed not to match", r.Ref(), o.Args[0])
		return noMatch
	}
	if (s.mark&mask == v) == o.Negate {
		return noMatch
	}
	return hasMatch
}
