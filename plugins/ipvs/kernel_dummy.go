package ipvs

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// DummySource is the Origin of kube-ipvs0's addresses read from the
// kernel.
const DummySource = "kube-ipvs0 (netlink)"

// readDummy reads the addresses on kube-ipvs0, for ip addr show dev
// kube-ipvs0; a node without the interface has none (ErrNotInKernel).
func readDummy() (snapshot.Dump, error) {
	failed := snapshot.Dump{Collector: snapshot.CollectorKubeIPVS0}
	ifc, err := net.InterfaceByName(Dummy)
	if err != nil {
		if strings.Contains(err.Error(), "no such network interface") {
			return failed, fmt.Errorf("no interface %s: %w", Dummy, dataplane.ErrNotInKernel)
		}
		return failed, fmt.Errorf("looking up %s: %w", Dummy, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return failed, fmt.Errorf("listing the addresses of %s: %w", Dummy, err)
	}
	var ps []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ones, _ := ipn.Mask.Size()
		ps = append(ps, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return snapshot.Dump{Collector: snapshot.CollectorKubeIPVS0, Origin: DummySource, Text: IfAddrsText(ifc.Index, Dummy, ps)}, nil
}
