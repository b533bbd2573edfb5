package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/snapshot"
)

// DummySource is the Origin of kube-ipvs0's addresses read from the
// kernel.
const DummySource = "kube-ipvs0 (netlink)"

// readDummy reads the addresses on kube-ipvs0 of the calling thread's
// network namespace, for ip addr show dev kube-ipvs0; a node without the
// interface has none (ErrNotInKernel).
func readDummy() (snapshot.Dump, error) {
	return readDummyFrom(ipvsnetlink.Kernel{})
}

// readDummyFrom reads kube-ipvs0's addresses over rtnetlink sockets of d.
func readDummyFrom(d ipvsnetlink.Dialer) (snapshot.Dump, error) {
	failed := snapshot.Dump{Collector: CollectorKubeIPVS0}
	l, err := ipvsnetlink.Addrs(d, Dummy)
	if errors.Is(err, ipvsnetlink.ErrNoLink) {
		return failed, fmt.Errorf("no interface %s: %w", Dummy, dataplane.ErrNotInKernel)
	}
	if err != nil {
		return failed, err
	}
	var ps []netip.Prefix
	for _, m := range l.Addrs {
		p, err := ifaPrefix(m)
		if err != nil {
			return failed, fmt.Errorf("an address of %s: %w", Dummy, err)
		}
		ps = append(ps, p)
	}
	return snapshot.Dump{Collector: CollectorKubeIPVS0, Origin: DummySource, Text: IfAddrsText(l.Index, Dummy, ps)}, nil
}

// rtnetlink's attributes of an address (include/uapi/linux/if_addr.h).
const (
	ifaAddress = 1
	ifaLocal   = 2
)

// ifaPrefix reads an RTM_NEWADDR message (struct ifaddrmsg: family,
// prefix length, flags, scope, index; then attributes) as Go's
// net.Interface.Addrs does: an IPv4 address is its local one where it
// has one (a point-to-point link's IFA_ADDRESS is the peer's).
func ifaPrefix(m netlink.Message) (netip.Prefix, error) {
	if len(m.Data) < 8 {
		return netip.Prefix{}, fmt.Errorf("%d bytes, shorter than struct ifaddrmsg", len(m.Data))
	}
	family, bits := m.Data[0], int(m.Data[1])
	ad, err := netlink.NewAttributeDecoder(m.Data[8:])
	if err != nil {
		return netip.Prefix{}, err
	}
	ad.ByteOrder = binary.NativeEndian
	var addr, local []byte
	for ad.Next() {
		switch ad.Type() {
		case ifaAddress:
			addr = ad.Bytes()
		case ifaLocal:
			local = ad.Bytes()
		}
	}
	if err := ad.Err(); err != nil {
		return netip.Prefix{}, err
	}
	if family == afInet && local != nil {
		addr = local
	}
	a, ok := netip.AddrFromSlice(addr)
	if !ok || (family == afInet) != a.Is4() {
		return netip.Prefix{}, fmt.Errorf("address %x of family %d", addr, family)
	}
	p := netip.PrefixFrom(a, bits)
	if !p.IsValid() {
		return netip.Prefix{}, fmt.Errorf("%s/%d", a, bits)
	}
	return p, nil
}

// afInet is AF_INET.
const afInet = 2
