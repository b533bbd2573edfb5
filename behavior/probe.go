package behavior

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
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

// ProbeSpace is what the probe sources of a node are chosen from. Both
// sides of a comparison choose from the same space, so they stand for each
// source class with the same address.
type ProbeSpace struct {
	// ClusterCIDRs are the local-traffic detector's ranges.
	ClusterCIDRs []netip.Prefix
	// NodeIPs are the node's addresses, its primary one first.
	NodeIPs []netip.Addr
	// PodCIDRs are the node's own pod ranges (its Node's spec.podCIDRs),
	// when known: a pod whose packets this node's rules see lives there,
	// and other components' rules (a CNI's masquerade) may tell it from a
	// pod elsewhere in the cluster CIDR.
	PodCIDRs []netip.Prefix
	// Taken are the endpoints of every Service: a probe that is an
	// endpoint is a pod reaching itself, which is masqueraded as a
	// hairpin. Nor is a probe ever one of NodeIPs or a loopback address:
	// a packet from one of them arriving on an interface is a martian,
	// not a client.
	Taken map[netip.Addr]bool
	// TakenSorted are taken too, sorted (netip.Addr.Compare): a large
	// cluster's endpoints as a partial snapshot holds them, searched
	// rather than copied into Taken.
	TakenSorted []netip.Addr
	// free remembers FreeHost's answers (see NewProbeSpace): on a node
	// whose endpoints fill the cluster CIDR from its top, finding a free
	// address is a long walk, and every frontend asks for the same ones.
	free *freeHosts
	// more are taken addresses added by With.
	more map[netip.Addr]bool
}

// With is the space with more taken addresses (a Service's endpoints
// after a change), remembering the free hosts it found that are still
// free. s is not changed.
func (s ProbeSpace) With(more []netip.Addr) ProbeSpace {
	n := s
	n.more = maps.Clone(s.more)
	if n.more == nil {
		n.more = map[netip.Addr]bool{}
	}
	for _, a := range more {
		n.more[a] = true
	}
	n.free = &freeHosts{m: map[netip.Prefix]freeHost{}}
	if s.free != nil {
		s.free.mu.Lock()
		for p, f := range s.free.m {
			if !n.more[f.addr] {
				n.free.m[p] = f
			}
		}
		s.free.mu.Unlock()
	}
	return n
}

// freeHosts is FreeHost's memory, shared by the copies of a space (and
// the goroutines that use them).
type freeHosts struct {
	mu sync.Mutex
	m  map[netip.Prefix]freeHost
}

type freeHost struct {
	addr netip.Addr
	ok   bool
}

// NewProbeSpace returns a space that remembers the free hosts it found; it
// is for one analysis (its Taken must not change after).
func NewProbeSpace(clusterCIDRs []netip.Prefix, nodeIPs []netip.Addr, taken map[netip.Addr]bool) ProbeSpace {
	return ProbeSpace{ClusterCIDRs: clusterCIDRs, NodeIPs: nodeIPs, Taken: taken, free: &freeHosts{m: map[netip.Prefix]freeHost{}}}
}

// taken reports whether a may not stand for a client from outside the
// node: an endpoint, a node address, or a loopback address.
func (s ProbeSpace) taken(a netip.Addr) bool {
	if _, ok := slices.BinarySearchFunc(s.TakenSorted, a, netip.Addr.Compare); ok {
		return true
	}
	return s.takenElsewhere(a)
}

// takenElsewhere is taken but for TakenSorted.
func (s ProbeSpace) takenElsewhere(a netip.Addr) bool {
	if a.IsLoopback() || s.Taken[a] || s.more[a] {
		return true
	}
	for _, n := range s.NodeIPs {
		if n == a {
			return true
		}
	}
	return false
}

// FreeHost is the highest host address of p below its broadcast address
// that is not taken; ok is false when every one is (or p is a loopback
// range, whose sources are the node itself).
func (s ProbeSpace) FreeHost(p netip.Prefix) (netip.Addr, bool) {
	p = p.Masked()
	if s.free == nil {
		return s.freeHost(p)
	}
	s.free.mu.Lock()
	defer s.free.mu.Unlock()
	if f, ok := s.free.m[p]; ok {
		return f.addr, f.ok
	}
	a, ok := s.freeHost(p)
	s.free.m[p] = freeHost{a, ok}
	return a, ok
}

func (s ProbeSpace) freeHost(p netip.Prefix) (netip.Addr, bool) {
	if p.Addr().IsLoopback() {
		return netip.Addr{}, false
	}
	a := LastHost(p)
	// k follows a down TakenSorted: the last address there not above a,
	// so that a run of taken addresses costs one step each, not a search.
	k, _ := slices.BinarySearchFunc(s.TakenSorted, a, netip.Addr.Compare)
	if k == len(s.TakenSorted) || s.TakenSorted[k] != a {
		k--
	}
	// Each taken address costs one step, so one more step than there are
	// taken addresses always reaches a free one if the prefix has it.
	for i := 0; i <= len(s.Taken)+len(s.TakenSorted)+len(s.more)+len(s.NodeIPs); i++ {
		if !p.Contains(a) {
			return netip.Addr{}, false
		}
		for k >= 0 && s.TakenSorted[k].Compare(a) > 0 {
			k--
		}
		if !(k >= 0 && s.TakenSorted[k] == a) && !s.takenElsewhere(a) {
			return a, true
		}
		a = a.Prev()
		if !a.IsValid() {
			return netip.Addr{}, false
		}
	}
	return netip.Addr{}, false
}

// Choose picks the probe sources for a frontend whose allowed source
// ranges are ranges (may be empty).
func (s ProbeSpace) Choose(ranges []netip.Prefix) Probes {
	var p Probes
	cidrs := s.ClusterCIDRs
	p.Pod = fallbackPod
	if len(cidrs) > 0 {
		pods := cidrs[0]
		// A pod of this node, where its pod range is known and is the
		// cluster's.
		for _, pc := range s.PodCIDRs {
			if pc.Bits() >= pods.Bits() && pods.Contains(pc.Addr()) {
				pods = pc
				break
			}
		}
		if a, ok := s.FreeHost(pods); ok {
			p.Pod = a
		} else if a, ok := s.FreeHost(cidrs[0]); ok {
			p.Pod = a
		}
		// Prefer a pod address inside an allowed range, if one overlaps.
		for _, r := range ranges {
			if r.Overlaps(pods) {
				if r.Bits() >= pods.Bits() {
					if a, ok := s.FreeHost(r); ok {
						p.Pod = a
					}
				}
				break
			}
		}
	}
	p.Node = fallbackNode
	if len(s.NodeIPs) > 0 {
		p.Node = s.NodeIPs[0]
	}
	p.External = fallbackExternal
	for _, r := range ranges {
		if r.Bits() == r.Addr().BitLen() {
			continue
		}
		if h, ok := s.FreeHost(r); ok && !inAny(h, cidrs) {
			p.External = h
			break
		}
	}
	p.Outside = outsideCands[0]
	for _, c := range outsideCands {
		if !inAny(c, ranges) && !inAny(c, cidrs) && !s.taken(c) {
			p.Outside = c
			break
		}
	}
	return p
}

// ChooseProbes picks the probe sources for a frontend from a space that
// holds no endpoints: clusterCIDRs are the local-traffic detector's
// ranges, nodeIPs the node's addresses, ranges the frontend's allowed
// source ranges (may be empty).
func ChooseProbes(clusterCIDRs []netip.Prefix, nodeIPs []netip.Addr, ranges []netip.Prefix) Probes {
	return ProbeSpace{ClusterCIDRs: clusterCIDRs, NodeIPs: nodeIPs}.Choose(ranges)
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
