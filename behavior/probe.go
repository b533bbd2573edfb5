package behavior

import (
	"net/netip"
)

// Probes are the source addresses used to stand for each source class when
// a data plane is walked. The expected side uses the same choice, so both
// agree on whether a class is allowed by a source-range firewall.
type Probes struct {
	Pod, Node, External netip.Addr
	// Outside is a source outside every source range, for checking that a
	// firewall drops what it should.
	Outside netip.Addr
}

// fallbacks for when nothing better is known: addresses from the
// benchmarking range 198.18.0.0/15, never a real client.
var (
	fallbackPod      = netip.MustParseAddr("10.255.255.254")
	fallbackNode     = netip.MustParseAddr("198.18.0.10")
	fallbackExternal = netip.MustParseAddr("198.18.255.254")
	outsideCands     = []netip.Addr{
		netip.MustParseAddr("198.19.255.254"),
		netip.MustParseAddr("192.0.0.254"),
		netip.MustParseAddr("100.127.255.254"),
	}
)

// ChooseProbes picks the probe sources for a frontend. clusterCIDRs are the
// local-traffic detector's ranges, nodeIPs the node's addresses, ranges the
// frontend's allowed source ranges (may be empty).
func ChooseProbes(clusterCIDRs []netip.Prefix, nodeIPs []netip.Addr, ranges []netip.Prefix) Probes {
	var p Probes
	p.Pod = fallbackPod
	if len(clusterCIDRs) > 0 {
		p.Pod = LastHost(clusterCIDRs[0])
		// Prefer a pod address inside an allowed range, if one overlaps.
		for _, r := range ranges {
			if r.Overlaps(clusterCIDRs[0]) {
				if r.Bits() >= clusterCIDRs[0].Bits() {
					p.Pod = LastHost(r)
				}
				break
			}
		}
	}
	p.Node = fallbackNode
	if len(nodeIPs) > 0 {
		p.Node = nodeIPs[0]
	}
	p.External = fallbackExternal
	for _, r := range ranges {
		if r.Bits() == r.Addr().BitLen() {
			continue
		}
		h := LastHost(r)
		if !inAny(h, clusterCIDRs) {
			p.External = h
			break
		}
	}
	p.Outside = outsideCands[0]
	for _, c := range outsideCands {
		if !inAny(c, ranges) && !inAny(c, clusterCIDRs) {
			p.Outside = c
			break
		}
	}
	return p
}

// Allowed reports whether src passes a source-range firewall (no ranges:
// everything passes).
func Allowed(src netip.Addr, ranges []netip.Prefix) bool {
	return len(ranges) == 0 || inAny(src, ranges)
}

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// LastHost is the highest address of a prefix below its broadcast address
// (the prefix's only address for a single-address prefix).
func LastHost(p netip.Prefix) netip.Addr {
	p = p.Masked()
	a := p.Addr()
	bits := a.BitLen() - p.Bits()
	if bits == 0 {
		return a
	}
	b := a.AsSlice()
	for i := 0; i < bits; i++ {
		byteIdx := len(b) - 1 - i/8
		b[byteIdx] |= 1 << (i % 8)
	}
	if bits >= 2 {
		b[len(b)-1] &^= 1 // below the broadcast address
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

// ParsePrefixes reads CIDRs or bare addresses, skipping unreadable ones.
func ParsePrefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out
}
