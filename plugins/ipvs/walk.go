package ipvs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// Walker looks a packet up in the IPVS table, as the kernel does for a
// new connection to a local virtual address.
type Walker struct {
	p   *Plane
	env *dataplane.Env
}

// Walk is WalkWith without options.
func (w *Walker) Walk(pkt dataplane.Packet) []dataplane.Branch {
	return w.WalkWith(pkt, dataplane.WalkOptions{})
}

// schedulers whose choice follows the weights over many connections;
// the others choose by the servers' current load, or by a hash of the
// client.
var (
	byWeight = map[string]bool{"wrr": true}
	byHash   = map[string]bool{"sh": true, "dh": true, "mh": true}
	byLoad   = map[string]bool{"lc": true, "wlc": true, "sed": true, "nq": true, "lblc": true, "lblcr": true, "ovf": true, "twos": true}
)

// WalkWith walks a packet through the IPVS table alone (a dump without
// ipvs mode's iptables rules): see lookup. A packet to no virtual server
// passes untouched.
func (w *Walker) WalkWith(pkt dataplane.Packet, o dataplane.WalkOptions) []dataplane.Branch {
	if w.p.noTable {
		if b := w.p.shownLookup(pkt, w.env, o); b != nil {
			return b
		}
		return []dataplane.Branch{{Probability: 1, Verdict: dataplane.Accept}}
	}
	ways := w.p.lookup(pkt, o)
	if ways == nil {
		return []dataplane.Branch{{Probability: 1, Verdict: dataplane.Accept}}
	}
	out := make([]dataplane.Branch, 0, len(ways))
	for _, way := range ways {
		b := dataplane.Branch{Probability: way.Probability, Verdict: dataplane.Accept, Reason: way.Reason, Hops: way.Hops,
			AffinitySeconds: way.AffinitySeconds, AffinityKey: way.AffinityKey, Notes: way.Notes}
		switch {
		case way.Verdict == dataplane.Missing:
			b.Verdict, b.Missing, b.Reason = dataplane.Missing, way.Reason, ""
		case way.Verdict != "":
			b.Verdict = way.Verdict
		default:
			b.DNAT = way.To.String()
		}
		out = append(out, b)
	}
	return out
}

// lookup is what IPVS does with a new connection to a local address: nil
// when no virtual server has the address; otherwise a way per real server
// the connection can reach, with its share, or, with no real server able
// to take it, a reject (IPVS answers port unreachable). Ways to another
// real server than the one o asks about are left out.
func (p *Plane) lookup(pkt dataplane.Packet, o dataplane.WalkOptions) []iptables.Onward {
	v := p.virtual(strings.ToUpper(pkt.Protocol), netip.AddrPortFrom(pkt.Dst, pkt.DstPort))
	if v == nil {
		return nil
	}
	// The hops are written out only for a walk that keeps them (not a
	// drift's): they print the virtual server and its real servers.
	var vhop dataplane.Hop
	if !o.NoHops {
		vhop = dataplane.Hop{Table: "ipvs", Chain: v.Key(), Line: v.Line, Rule: v.String()}
	}
	var live []Real
	total := 0
	for _, r := range v.Reals {
		// Every scheduler passes over a server of weight 0: kube-proxy
		// sets it on an endpoint that is going away.
		if r.Weight > 0 {
			live = append(live, r)
			total += r.Weight
		}
	}
	if len(live) == 0 {
		reason := "the virtual server has no real server"
		if len(v.Reals) > 0 {
			reason = "every real server of the virtual server has weight 0"
		}
		return []iptables.Onward{{Probability: 1, Verdict: dataplane.Reject, Reason: reason + ": IPVS answers ICMP port unreachable", Hops: hops(o, vhop)}}
	}
	if v.Scheduler == "fo" {
		// Weighted failover: the available server of the highest weight.
		best := live[0]
		for _, r := range live[1:] {
			if r.Weight > best.Weight {
				best = r
			}
		}
		live, total = []Real{best}, best.Weight
	}
	out := []iptables.Onward{}
	for _, r := range live {
		if !r.Redacted && !o.Keeps(r.Addr) {
			continue
		}
		share := 1 / float64(len(live))
		if byWeight[v.Scheduler] || byHash[v.Scheduler] || byLoad[v.Scheduler] {
			share = float64(r.Weight) / float64(total)
		}
		way := iptables.Onward{Probability: share, To: r.Addr}
		if !o.NoHops {
			way.Hops = []dataplane.Hop{vhop, {Table: "ipvs", Chain: v.Key(), Line: r.Line, Rule: r.String(), Probability: share}}
		}
		if r.Redacted {
			// Only the walk of the table alone meets it (Unchecked).
			way.Verdict, way.Reason = dataplane.Missing, fmt.Sprintf("line %d's real server, address redacted,", r.Line)
			out = append(out, way)
			continue
		}
		if v.Persistent > 0 {
			way.AffinitySeconds, way.AffinityKey = v.Persistent, "ipvs "+v.Key()
		}
		if note := schedulerNote(v); note != "" {
			way.Notes = append(way.Notes, note)
		}
		if r.Forward != "Masq" {
			way.Notes = append(way.Notes, fmt.Sprintf("%s forwarding: the packet reaches %s with its destination unchanged (kube-proxy uses Masq)", r.Forward, r.Addr))
		}
		out = append(out, way)
	}
	return out
}

// virtualKey finds a virtual server: its protocol, in capitals, and
// address.
type virtualKey struct {
	protocol string
	addr     netip.AddrPort
}

// virtual is the table's first virtual server of a protocol (in
// capitals) and address, from an index made on the first lookup: a node
// of ten thousand Services has tens of thousands of virtual servers, and
// a check looks one up for each of its walks.
func (p *Plane) virtual(protocol string, addr netip.AddrPort) *Virtual {
	p.indexOnce.Do(func() {
		p.index = make(map[virtualKey]*Virtual, len(p.table.Virtuals))
		for _, v := range p.table.Virtuals {
			k := virtualKey{strings.ToUpper(v.Protocol), v.Addr}
			if _, ok := p.index[k]; !ok && v.Protocol != "" {
				p.index[k] = v
			}
		}
	})
	return p.index[virtualKey{protocol, addr}]
}

// schedulerNote says how far the shares hold for the virtual server's
// scheduler.
func schedulerNote(v *Virtual) string {
	switch {
	case byHash[v.Scheduler]:
		return fmt.Sprintf("scheduler %s: a client always reaches the same real server, chosen by a hash; the shares are over many clients", v.Scheduler)
	case byLoad[v.Scheduler]:
		return fmt.Sprintf("scheduler %s: the real server depends on the connections each has now; the shares are the weights'", v.Scheduler)
	case v.Scheduler != "rr" && !byWeight[v.Scheduler] && v.Scheduler != "fo":
		return fmt.Sprintf("scheduler %s is not known to this svctrace: the shares are equal", v.Scheduler)
	}
	return ""
}

func hops(o dataplane.WalkOptions, hs ...dataplane.Hop) []dataplane.Hop {
	if o.NoHops {
		return nil
	}
	return hs
}
