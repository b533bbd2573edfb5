package behavior

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Digest digests what the space's probes are chosen by: two spaces of
// equal digests choose the same probes.
func (s ProbeSpace) Digest() uint64 {
	h := xxhash.New()
	var b []byte
	for _, p := range s.ClusterCIDRs {
		b = p.AppendTo(b)
		b = append(b, ',')
	}
	b = append(b, '|')
	for _, a := range s.NodeIPs {
		b = a.AppendTo(b)
		b = append(b, ',')
	}
	b = append(b, '|')
	for _, p := range s.PodCIDRs {
		b = p.AppendTo(b)
		b = append(b, ',')
	}
	b = append(b, '|')
	h.Write(b)
	taken := slices.SortedFunc(maps.Keys(s.Taken), netip.Addr.Compare)
	for _, set := range [][]netip.Addr{taken, s.TakenSorted, slices.SortedFunc(maps.Keys(s.more), netip.Addr.Compare)} {
		b = b[:0]
		for _, a := range set {
			b = a.AppendTo(b)
			b = append(b, ',')
		}
		b = append(b, '|')
		h.Write(b)
	}
	return h.Sum64()
}
