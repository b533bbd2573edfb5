package ipvs

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/snapshot"
)

var _ dataplane.KernelReader = Loader{}

// KernelSource is the Origin of a table read over netlink.
const KernelSource = "IPVS (netlink)"

// ReadKernel reads ipvs mode's state of the calling thread's network
// namespace: the IPVS table over generic netlink, for ipvsadm -Ln, printed
// as ipvsadm does (connection counts included); the addresses on
// kube-ipvs0, for ip addr show. The ipsets are ipset save's to read. A kernel without IPVS
// loaded has no table (dataplane.ErrNotInKernel), which is no error on a
// node whose kube-proxy runs in another mode. Nothing is loaded or changed:
// github.com/moby/ipvs, the usual library, runs modprobe ip_vs when it
// starts, which a read must not do.
func (Loader) ReadKernel(collector, _ string) (snapshot.Dump, error) {
	switch collector {
	case CollectorIPVS:
		return readIPVS()
	case CollectorKubeIPVS0:
		return readDummy()
	}
	return snapshot.Dump{}, fmt.Errorf("ipvs: no netlink read stands for %s", collector)
}

// readIPVS reads the IPVS table, for ipvsadm -Ln.
func readIPVS() (snapshot.Dump, error) {
	collector := CollectorIPVS
	failed := snapshot.Dump{Collector: collector}
	t, err := readNetlink()
	if err != nil {
		return failed, err
	}
	if t == nil {
		return failed, fmt.Errorf("IPVS is not loaded: %w", dataplane.ErrNotInKernel)
	}
	return snapshot.Dump{Collector: collector, Origin: KernelSource, Text: t.Listing()}, nil
}

// IPVS's generic netlink attributes of a virtual server and a real
// server (include/uapi/linux/ip_vs.h).
const (
	svcAF, svcProtocol, svcAddr, svcPort, svcFWMark, svcSched, svcFlags, svcTimeout, svcNetmask = 1, 2, 3, 4, 5, 6, 7, 8, 9

	dstAddr, dstPort, dstFwd, dstWeight, dstActive, dstInactive, dstAF = 1, 2, 3, 4, 7, 8, 11
)

// readNetlink dumps the virtual servers of the calling thread's network
// namespace and each one's real servers; nil when the kernel has no IPVS.
func readNetlink() (*Table, error) {
	return readTable(ipvsnetlink.Kernel{})
}

// readTable reads the IPVS table over netlink sockets of d.
func readTable(d ipvsnetlink.Dialer) (*Table, error) {
	c, err := ipvsnetlink.OpenIPVS(d)
	if err != nil || c == nil {
		return nil, err
	}
	defer c.Close()
	msgs, err := c.Services()
	if err != nil {
		return nil, fmt.Errorf("listing IPVS services: %w", err)
	}
	t := &Table{}
	for _, m := range msgs {
		svc, err := nested(m.Data, ipvsnetlink.AttrService)
		if err != nil {
			return nil, fmt.Errorf("an IPVS service: %w", err)
		}
		v, id, err := serviceOf(svc)
		if err != nil {
			return nil, err
		}
		dms, err := c.Dests(id)
		if err != nil {
			return nil, fmt.Errorf("listing the real servers of %s: %w", v.Key(), err)
		}
		for _, dm := range dms {
			dst, err := nested(dm.Data, ipvsnetlink.AttrDest)
			if err != nil {
				return nil, fmt.Errorf("a real server of %s: %w", v.Key(), err)
			}
			r, err := realOf(dst)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.Key(), err)
			}
			v.Reals = append(v.Reals, r)
		}
		t.Virtuals = append(t.Virtuals, v)
	}
	return t, nil
}

// nested is the content of the nested attribute typ of a message.
func nested(data []byte, typ uint16) ([]byte, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, err
	}
	for ad.Next() {
		if ad.Type() == typ {
			return ad.Bytes(), nil
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no attribute %d", typ)
}

// serviceOf reads a virtual server, and the attributes that name it in a
// request for its real servers.
func serviceOf(b []byte) (*Virtual, []byte, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, nil, err
	}
	ad.ByteOrder = binary.NativeEndian
	var (
		af, proto uint16
		addr      []byte
		port      uint16
		flags     uint32
		netmask   []byte
		id        []netlink.Attribute
	)
	v := &Virtual{}
	for ad.Next() {
		switch ad.Type() {
		case svcAF:
			af = ad.Uint16()
			id = append(id, netlink.Attribute{Type: svcAF, Data: ad.Bytes()})
		case svcProtocol:
			proto = ad.Uint16()
			id = append(id, netlink.Attribute{Type: svcProtocol, Data: ad.Bytes()})
		case svcAddr:
			addr = ad.Bytes()
			id = append(id, netlink.Attribute{Type: svcAddr, Data: ad.Bytes()})
		case svcPort:
			port = binary.BigEndian.Uint16(ad.Bytes())
			id = append(id, netlink.Attribute{Type: svcPort, Data: ad.Bytes()})
		case svcFWMark:
			v.FWMark = ad.Uint32()
			id = append(id, netlink.Attribute{Type: svcFWMark, Data: ad.Bytes()})
		case svcSched:
			v.Scheduler = ad.String()
		case svcFlags:
			// struct ip_vs_flags: the flags, then the mask of those set.
			if raw := ad.Bytes(); len(raw) == 8 {
				flags = binary.NativeEndian.Uint32(raw)
			}
		case svcTimeout:
			v.Persistent = int32(ad.Uint32())
		case svcNetmask:
			netmask = ad.Bytes()
		}
	}
	if err := ad.Err(); err != nil {
		return nil, nil, err
	}
	if v.FWMark == 0 {
		name, ok := map[uint16]string{syscall.IPPROTO_TCP: "TCP", syscall.IPPROTO_UDP: "UDP", 132: "SCTP"}[proto]
		if !ok {
			return nil, nil, fmt.Errorf("an IPVS service of protocol %d", proto)
		}
		a, err := addrOf(af, addr)
		if err != nil {
			return nil, nil, fmt.Errorf("an IPVS service: %w", err)
		}
		v.Protocol, v.Addr = name, netip.AddrPortFrom(a, port)
	}
	if flags&svcPersistentFlag == 0 {
		v.Persistent = 0
	} else if len(netmask) == 4 {
		if ones, bits := net.IPMask(netmask).Size(); bits == 32 && ones != 32 && ones != 0 {
			v.Netmask = net.IP(netmask).String()
		}
	}
	v.OnePacket = flags&svcOnePacketFlag != 0
	names, ok := schedFlagNames[v.Scheduler]
	if !ok {
		names = [3]string{"flag-1", "flag-2", "flag-3"}
	}
	for i, f := range []uint32{svcSched1Flag, svcSched2Flag, svcSched3Flag} {
		if flags&f != 0 {
			v.SchedFlags = append(v.SchedFlags, names[i])
		}
	}
	b, err = netlink.MarshalAttributes(id)
	return v, b, err
}

// Kernel flags of a virtual server (IP_VS_SVC_F_*).
const (
	svcPersistentFlag = 0x0001
	svcOnePacketFlag  = 0x0004
	svcSched1Flag     = 0x0008
	svcSched2Flag     = 0x0010
	svcSched3Flag     = 0x0020
)

// schedFlagNames are how ipvsadm names the scheduler flags, per scheduler.
var schedFlagNames = map[string][3]string{
	"sh": {"sh-fallback", "sh-port", "flag-3"},
	"mh": {"mh-fallback", "mh-port", "flag-3"},
}

// Forwarding methods of a real server (IP_VS_CONN_F_FWD_MASK).
var forwardNames = map[uint32]string{0: "Masq", 1: "Local", 2: "Tunnel", 3: "Route"}

func realOf(b []byte) (Real, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Real{}, err
	}
	ad.ByteOrder = binary.NativeEndian
	var (
		af   uint16
		addr []byte
		r    Real
		fwd  uint32
		port uint16
	)
	for ad.Next() {
		switch ad.Type() {
		case dstAddr:
			addr = ad.Bytes()
		case dstPort:
			port = binary.BigEndian.Uint16(ad.Bytes())
		case dstFwd:
			fwd = ad.Uint32() & 0x7
		case dstWeight:
			r.Weight = int(int32(ad.Uint32()))
		case dstActive:
			r.ActiveConn = int(ad.Uint32())
		case dstInactive:
			r.InActConn = int(ad.Uint32())
		case dstAF:
			af = ad.Uint16()
		}
	}
	if err := ad.Err(); err != nil {
		return Real{}, err
	}
	a, err := addrOf(af, addr)
	if err != nil {
		return Real{}, fmt.Errorf("a real server: %w", err)
	}
	r.Addr = netip.AddrPortFrom(a, port)
	if r.Forward = forwardNames[fwd]; r.Forward == "" {
		return Real{}, fmt.Errorf("real server %s: forwarding method %d", r.Addr, fwd)
	}
	return r, nil
}

// addrOf reads an address attribute: the kernel sends a 16-byte union,
// of which an IPv4 address uses the first four.
func addrOf(af uint16, b []byte) (netip.Addr, error) {
	switch {
	case (af == syscall.AF_INET || af == 0) && len(b) >= 4:
		return netip.AddrFrom4([4]byte(b[:4])), nil
	case af == syscall.AF_INET6 && len(b) >= 16:
		return netip.AddrFrom16([16]byte(b[:16])), nil
	}
	return netip.Addr{}, fmt.Errorf("address of family %d and %d bytes", af, len(b))
}

// Listing prints the table as ipvsadm -Ln does, sorted as it sorts:
// virtual servers by firewall mark, address family, protocol, address and
// port; each one's real servers by address and port.
func (t *Table) Listing() string {
	vs := append([]*Virtual(nil), t.Virtuals...)
	protoRank := map[string]int{"TCP": 6, "UDP": 17, "SCTP": 132}
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.FWMark != b.FWMark {
			return a.FWMark < b.FWMark
		}
		if a4, b4 := a.Addr.Addr().Is4(), b.Addr.Addr().Is4(); a4 != b4 {
			return a4 // by address family, IPv4's number being the lower
		}
		if a.Protocol != b.Protocol {
			return protoRank[a.Protocol] < protoRank[b.Protocol]
		}
		return ipvsadmLess(a.Addr, b.Addr)
	})
	var b strings.Builder
	b.WriteString("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	for _, v := range vs {
		key := strings.Replace(v.Key(), " ", "  ", 1)
		line := key + " " + strings.TrimPrefix(v.String(), v.Key()+" ")
		b.WriteString(line + "\n")
		reals := append([]Real(nil), v.Reals...)
		sort.SliceStable(reals, func(i, j int) bool { return ipvsadmLess(reals[i].Addr, reals[j].Addr) })
		for _, r := range reals {
			fmt.Fprintf(&b, "  -> %-28s %-7s %-6d %-10d %d\n", r.Addr, r.Forward, r.Weight, r.ActiveConn, r.InActConn)
		}
	}
	return b.String()
}

// ipvsadmLess orders addresses as ipvsadm's comparison does: it subtracts
// them word by word as 32-bit numbers and takes the sign of the result, so
// addresses more than half the space apart compare the wrong way round
// (198.51.100.7 before 10.0.2.15), and ipvsadm lists them so.
func ipvsadmLess(a, b netip.AddrPort) bool {
	wa, wb := a.Addr().As16(), b.Addr().As16()
	start := 0
	if a.Addr().Is4() && b.Addr().Is4() {
		start = 12
	}
	for i := start; i < 16; i += 4 {
		if d := int32(binary.BigEndian.Uint32(wa[i:]) - binary.BigEndian.Uint32(wb[i:])); d != 0 {
			return d < 0
		}
	}
	return a.Port() < b.Port()
}
