package trace

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
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
func ParsePacket(p PacketSpec) (dataplane.Packet, error) {
	var pkt dataplane.Packet
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
	pkt = dataplane.Packet{Src: src, Dst: ap.Addr(), Protocol: proto, SrcPort: 40000, DstPort: ap.Port(), Entry: dataplane.Prerouting}
	switch p.From {
	case "", "pod", "external":
	case "node":
		pkt.Entry = dataplane.Output
	default:
		return pkt, fmt.Errorf("--from %q: want pod, node or external", p.From)
	}
	return pkt, nil
}

// Trace walks one packet through the analysed node's rules.
func Trace(a *analysis.NodeAnalysis, c *snapshot.Cluster, spec PacketSpec) (*TraceReport, error) {
	pkt, err := ParsePacket(spec)
	if err != nil {
		return nil, err
	}
	env := &dataplane.Env{LocalAddrs: a.LocalAddrs, Sticky: map[string]bool{}}
	standIn := netip.Addr{}
	if len(a.NodeIPs) == 0 {
		// As explain does: one address stands in for the node's.
		standIn = behavior.ChooseProbes(nil, nil, nil).Node
		env.LocalAddrs = append([]netip.Addr{standIn}, env.LocalAddrs...)
	}
	for _, s := range spec.Sticky {
		env.Sticky[s] = true
	}
	r := &TraceReport{TypeMeta: NewTypeMeta("TraceReport"), Node: a.Node, Mode: a.Plane.Mode(), Packet: pkt.String()}
	pods := podsOf(c, a.View)
	for _, b := range a.Plane.Walker(env).Walk(pkt) {
		tb := Branch{Probability: b.Probability, DNAT: b.DNAT, Masquerade: b.Masquerade, Reason: b.Reason,
			AffinitySeconds: b.AffinitySeconds, AffinityKey: b.AffinityKey, Notes: b.Notes}
		switch b.Verdict {
		case dataplane.Reject:
			tb.Verdict = "reject"
		case dataplane.Drop:
			tb.Verdict = "drop"
		case dataplane.Redirect:
			tb.Verdict = "redirect"
			tb.DNAT = "local port " + b.Redirect
		case dataplane.Missing:
			tb.Verdict = "unknown"
			tb.Reason = "goes on in " + b.Missing + ", whose rules the input does not show"
			if b.MissingAddr != "" {
				tb.Reason += " (kube-proxy's comment names its endpoint " + b.MissingAddr + ")"
				tb.Pod = pods[b.MissingAddr]
			}
		default:
			if b.DNAT != "" {
				tb.Verdict = "forward"
			} else {
				tb.Verdict = "accept"
				tb.Reason = "no service rule translated the packet"
			}
		}
		for _, h := range b.Hops {
			d := a.Plane.Describe(h)
			tb.Hops = append(tb.Hops, Hop{Table: h.Table, Chain: h.Chain, Line: h.Line, Rule: h.Rule, Element: h.Element, Probability: h.Probability,
				Service: d.Service, Endpoint: d.Endpoint, Shared: d.Shared, ByLine: d.ByLine})
			if tb.Service == "" && !h.IsPolicy {
				tb.Service = d.Service
			}
		}
		if tb.Service == "" && tb.Verdict == "forward" {
			// The plane's rules name no Service (ipvs): the model's
			// frontend at the packet's destination does.
			tb.Service = frontendService(a, env, pkt)
		}
		tb.Pod = pods[b.DNAT]
		r.Branches = append(r.Branches, tb)
	}
	if standIn.IsValid() {
		r.Notes = append(r.Notes, fmt.Sprintf("node addresses unknown: %s stands in for the node's address, as in explain; "+
			"a packet to the node's real address is not seen as local (give the node's addresses: --node-ip when importing)", standIn))
	}
	r.Notes = append(r.Notes, a.Config.Inferred...)
	return r, nil
}

// frontendService is the Service port whose frontend the packet is sent
// to, by the model ("" without objects, or for no frontend).
func frontendService(a *analysis.NodeAnalysis, env *dataplane.Env, pkt dataplane.Packet) string {
	if a.Expected == nil {
		return ""
	}
	for _, f := range a.Expected.Frontends {
		k := f.Key
		if int(k.Port) != int(pkt.DstPort) || !strings.EqualFold(k.Protocol, pkt.Protocol) {
			continue
		}
		if k.IP == pkt.Dst.String() || k.Kind == behavior.NodePort && k.IP == "" && env.IsLocal(pkt.Dst) {
			return f.Service
		}
	}
	return ""
}
