package trace

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/reconcile"
)

// PacketSpec is a packet as the user gives it.
type PacketSpec struct {
	Src string
	// Dst is IP:PORT[/PROTO].
	Dst string
	// From is pod, node or external.
	From string
	// Sticky lists affinity (recent) lists already holding the source.
	Sticky []string
}

// ParsePacket reads a PacketSpec into a packet.
func ParsePacket(p PacketSpec) (iptables.Packet, error) {
	var pkt iptables.Packet
	src, err := netip.ParseAddr(p.Src)
	if err != nil {
		return pkt, fmt.Errorf("--src %q: not an IP address", p.Src)
	}
	dst, proto, _ := strings.Cut(p.Dst, "/")
	if proto == "" {
		proto = "tcp"
	}
	proto = strings.ToLower(proto)
	if proto != "tcp" && proto != "udp" && proto != "sctp" {
		return pkt, fmt.Errorf("--dst %q: protocol must be tcp, udp or sctp", p.Dst)
	}
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return pkt, fmt.Errorf("--dst %q: want IP:PORT[/PROTO]", p.Dst)
	}
	pkt = iptables.Packet{Src: src, Dst: ap.Addr(), Protocol: proto, SrcPort: 40000, DstPort: ap.Port(), Entry: iptables.EntryPrerouting}
	switch p.From {
	case "", "pod", "external":
	case "node":
		pkt.Entry = iptables.EntryOutput
	default:
		return pkt, fmt.Errorf("--from %q: want pod, node or external", p.From)
	}
	return pkt, nil
}

// Trace walks one packet through the analysed node's rules.
func Trace(a *reconcile.NodeAnalysis, c *inspect.Cluster, spec PacketSpec) (*TraceReport, error) {
	pkt, err := ParsePacket(spec)
	if err != nil {
		return nil, err
	}
	env := &iptables.Env{LocalAddrs: a.NodeIPs, Sticky: map[string]bool{}}
	for _, s := range spec.Sticky {
		env.Sticky[s] = true
	}
	w := iptables.NewWalker(a.Rules, env)
	r := &TraceReport{TypeMeta: NewTypeMeta("TraceReport"), Node: a.Node, Packet: pkt.String()}
	pods := podsOf(c, a.View)
	for _, b := range w.Walk(pkt) {
		tb := Branch{Probability: b.Probability, DNAT: b.DNAT, Masquerade: b.Masquerade, Reason: b.Reason, Notes: b.Notes}
		switch {
		case b.Verdict == iptables.VerdictReject:
			tb.Verdict = "reject"
		case b.Verdict == iptables.VerdictDrop:
			tb.Verdict = "drop"
		case b.Verdict == iptables.VerdictRedirect:
			tb.Verdict = "redirect"
			tb.DNAT = "local port " + b.Redirect
		case b.Verdict == iptables.VerdictMissing:
			tb.Verdict = "unknown"
			tb.Reason = "jumps to " + b.Missing + ", which the dump does not hold"
		case b.DNAT != "":
			tb.Verdict = "forward"
		default:
			tb.Verdict = "accept"
			tb.Reason = "no service rule translated the packet"
		}
		for _, set := range b.RecentSet {
			if secs, ok := b.RecentChecked[set]; ok {
				tb.AffinitySeconds = int32(secs)
			}
		}
		for _, h := range b.Hops {
			hop := Hop{Table: h.Table, Chain: h.Chain, Probability: h.Probability}
			if h.Rule != nil {
				hop.Line, hop.Rule = h.Rule.Line, h.Rule.Raw
				if tb.Service == "" {
					tb.Service, _ = iptables.SPNFromComment(h.Rule.Comment())
				}
			} else {
				hop.Rule = h.Note
			}
			tb.Hops = append(tb.Hops, hop)
		}
		tb.Pod = pods[b.DNAT]
		r.Branches = append(r.Branches, tb)
	}
	if len(a.NodeIPs) == 0 {
		r.Notes = append(r.Notes, "node addresses unknown: addrtype LOCAL matches only loopback")
	}
	r.Notes = append(r.Notes, a.Config.Inferred...)
	return r, nil
}
