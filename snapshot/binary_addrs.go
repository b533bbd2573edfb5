package snapshot

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
)

// The address section (secAddrs) is every endpoint address of the file,
// so that a partial load knows them without decoding every EndpointSlice:
//
//	count   uint32
//	addrs   count × {length byte (4 or 16), the address's bytes}, sorted
//	        (netip.Addr.Compare), each once

// endpointAddrs are the addresses endpoints stand at in c: the first
// address of every endpoint of every EndpointSlice (the one kube-proxy
// uses), and every address and not-ready address of every v1 Endpoints
// object; sorted, each once. Texts that are not an IP address (an FQDN
// slice's) and addresses with a zone are left out.
func endpointAddrs(c *Cluster) []netip.Addr {
	var out []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			out = append(out, a)
		}
	}
	for i := range c.EndpointSlices {
		for _, e := range c.EndpointSlices[i].Endpoints {
			if len(e.Addresses) > 0 {
				add(e.Addresses[0])
			}
		}
	}
	for i := range c.Endpoints {
		for _, ss := range c.Endpoints[i].Subsets {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			for _, a := range ss.NotReadyAddresses {
				add(a.IP)
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func encodeAddrs(addrs []netip.Addr) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(addrs)))
	for _, a := range addrs {
		if a.Is4() {
			b := a.As4()
			out = append(out, 4)
			out = append(out, b[:]...)
		} else {
			b := a.As16()
			out = append(out, 16)
			out = append(out, b[:]...)
		}
	}
	return out
}

func decodeAddrs(b []byte) ([]netip.Addr, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("damaged file: %s: %s", sectionLabel(secAddrs), fmt.Sprintf(format, args...))
	}
	if len(b) < 4 {
		return nil, fail("%d bytes, too short for its count", len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n)*5 > uint64(len(b)-4) {
		return nil, fail("counts %d addresses, more than its %d bytes hold", n, len(b))
	}
	out := make([]netip.Addr, 0, n)
	rest := b[4:]
	for i := range n {
		if len(rest) == 0 {
			return nil, fail("address %d of %d is missing", i, n)
		}
		var a netip.Addr
		switch l := rest[0]; {
		case l == 4 && len(rest) >= 5:
			a = netip.AddrFrom4([4]byte(rest[1:5]))
		case l == 16 && len(rest) >= 17:
			a = netip.AddrFrom16([16]byte(rest[1:17]))
		default:
			return nil, fail("address %d (at offset %d) has length %d or is cut short", i, len(b)-len(rest), l)
		}
		rest = rest[1+rest[0]:]
		if len(out) > 0 && out[len(out)-1].Compare(a) >= 0 {
			return nil, fail("address %d (%s) is out of order", i, a)
		}
		out = append(out, a)
	}
	if len(rest) != 0 {
		return nil, fail("%d bytes follow the last address", len(rest))
	}
	return out, nil
}
