//go:build linux

package ipvs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"

	mobyipvs "github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/plugins/iptables"
)

// applyDelta makes a delta's changes in the kernel of the calling
// process's network namespace, over netlink: the ipsets and their members
// first, then the virtual and real servers, kube-ipvs0's addresses, the
// iptables rules (iptables-restore --noflush), and last what is removed,
// so that a packet meets the new rules before the old ones go. Each
// operation is the kernel's own (an entry is added or not); the write as
// a whole runs in a process of its own, which a stopped svctrace does not
// cut short (see Write).
func applyDelta(ctx context.Context, d *delta, family, backend string) error {
	// Nothing is written unless the iptables part reads back as the
	// delta's own rule changes.
	if err := d.checkRules(); err != nil {
		return err
	}
	for _, s := range d.newSets {
		if err := createSet(s); err != nil {
			return err
		}
		for _, m := range s.Members {
			if err := setMember(s, m.Text, true); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(d.addMembers) {
		for _, m := range d.addMembers[name] {
			if err := setMember(&IPSet{Name: name, Type: typeOfSet(name)}, m, true); err != nil {
				return err
			}
		}
	}
	h, err := ipvsHandle(d)
	if err != nil {
		return err
	}
	if h != nil {
		defer h.Close()
	}
	for _, v := range d.newVirtuals {
		svc := service(v)
		if err := h.NewService(svc); err != nil {
			return fmt.Errorf("adding IPVS virtual server %s: %w", v.Key(), err)
		}
		for _, r := range v.Reals {
			if err := h.NewDestination(svc, destination(r)); err != nil {
				return fmt.Errorf("adding real server %s to %s: %w", r.Addr, v.Key(), err)
			}
		}
	}
	for _, v := range d.setVirtuals {
		if err := h.UpdateService(service(v)); err != nil {
			return fmt.Errorf("changing IPVS virtual server %s: %w", v.Key(), err)
		}
	}
	for _, k := range sortedKeys(d.addReals) {
		for _, r := range d.addReals[k] {
			if err := h.NewDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("adding real server %s to %s: %w", r.Addr, k, err)
			}
		}
	}
	for _, k := range sortedKeys(d.setReals) {
		for _, r := range d.setReals[k] {
			if err := h.UpdateDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("changing real server %s of %s: %w", r.Addr, k, err)
			}
		}
	}
	if len(d.addAddrs)+len(d.delAddrs) > 0 {
		link, err := ensureDummy()
		if err != nil {
			return err
		}
		for _, a := range d.addAddrs {
			if err := netlink.AddrAdd(link, addr(a)); err != nil && !errors.Is(err, syscall.EEXIST) {
				return fmt.Errorf("binding %s on %s: %w", a, Dummy, err)
			}
		}
	}
	if d.rulesPayload != "" {
		if err := iptables.RestoreKernel(ctx, backend, family, d.rulesPayload, nil); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(d.delReals) {
		for _, r := range d.delReals[k] {
			if err := h.DelDestination(keyService(k), destination(r)); err != nil {
				return fmt.Errorf("removing real server %s of %s: %w", r.Addr, k, err)
			}
		}
	}
	for _, v := range d.delVirtuals {
		if err := h.DelService(service(v)); err != nil {
			return fmt.Errorf("removing IPVS virtual server %s: %w", v.Key(), err)
		}
	}
	if len(d.delAddrs) > 0 {
		link, err := netlink.LinkByName(Dummy)
		if err != nil {
			return fmt.Errorf("looking up %s: %w", Dummy, err)
		}
		for _, a := range d.delAddrs {
			if err := netlink.AddrDel(link, addr(a)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
				return fmt.Errorf("unbinding %s from %s: %w", a, Dummy, err)
			}
		}
	}
	for _, name := range sortedKeys(d.delMembers) {
		for _, m := range d.delMembers[name] {
			if err := setMember(&IPSet{Name: name, Type: typeOfSet(name)}, m, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// ipvsHandle opens IPVS over netlink when the delta changes virtual or
// real servers (nil when it does not: a kernel without IPVS can still
// have its ipsets and addresses written).
func ipvsHandle(d *delta) (*mobyipvs.Handle, error) {
	if len(d.newVirtuals)+len(d.setVirtuals)+len(d.delVirtuals)+len(d.addReals)+len(d.setReals)+len(d.delReals) == 0 {
		return nil, nil
	}
	h, err := mobyipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("opening IPVS over netlink: %w", err)
	}
	return h, nil
}

// ensureDummy is kube-ipvs0, made as kube-proxy makes it (a dummy
// interface) when it is missing.
func ensureDummy() (netlink.Link, error) {
	link, err := netlink.LinkByName(Dummy)
	if err == nil {
		return link, nil
	}
	var notFound netlink.LinkNotFoundError
	if !errors.As(err, &notFound) {
		return nil, fmt.Errorf("looking up %s: %w", Dummy, err)
	}
	if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: Dummy}}); err != nil {
		return nil, fmt.Errorf("creating %s: %w", Dummy, err)
	}
	return netlink.LinkByName(Dummy)
}

func addr(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
}

// service is a virtual server as IPVS takes it, with the flags and
// netmask kube-proxy gives it.
func service(v *Virtual) *mobyipvs.Service {
	s := keyService(v.Key())
	s.SchedName = v.Scheduler
	if v.Persistent > 0 {
		s.Flags |= svcPersistentFlag
		s.Timeout = uint32(v.Persistent)
	}
	names, ok := schedFlagNames[v.Scheduler]
	if !ok {
		names = [3]string{"flag-1", "flag-2", "flag-3"}
	}
	for i, f := range []uint32{svcSched1Flag, svcSched2Flag, svcSched3Flag} {
		if slices.Contains(v.SchedFlags, names[i]) {
			s.Flags |= f
		}
	}
	if v.OnePacket {
		s.Flags |= svcOnePacketFlag
	}
	return s
}

// keyService is the virtual server of a key ("TCP 10.96.0.1:443"), which
// names it to IPVS.
func keyService(key string) *mobyipvs.Service {
	proto, ap, _ := strings.Cut(key, " ")
	a := netip.MustParseAddrPort(ap)
	s := &mobyipvs.Service{Address: a.Addr().AsSlice(), Port: a.Port(),
		Protocol: map[string]uint16{"TCP": unix.IPPROTO_TCP, "UDP": unix.IPPROTO_UDP, "SCTP": unix.IPPROTO_SCTP}[proto]}
	if a.Addr().Is4() {
		s.AddressFamily, s.Netmask = unix.AF_INET, 0xffffffff
	} else {
		s.AddressFamily, s.Netmask = unix.AF_INET6, 128
	}
	return s
}

// destination is a real server, masqueraded as kube-proxy has it.
func destination(r Real) *mobyipvs.Destination {
	d := &mobyipvs.Destination{Address: r.Addr.Addr().AsSlice(), Port: r.Addr.Port(), Weight: r.Weight, AddressFamily: unix.AF_INET}
	if r.Addr.Addr().Is6() {
		d.AddressFamily = unix.AF_INET6
	}
	for bits, name := range forwardNames {
		if name == r.Forward {
			d.ConnectionFlags = bits
		}
	}
	return d
}

// createSet creates a set as kube-proxy does.
func createSet(s *IPSet) error {
	o := netlink.IpsetCreateOptions{MaxElements: 65536, Family: unix.AF_INET}
	if s.Family == "inet6" {
		o.Family = unix.AF_INET6
	}
	if s.Type == "bitmap:port" {
		// A bitmap has its range, and no size limit to give.
		o.PortFrom, o.PortTo, o.MaxElements = 0, 65535, 0
	}
	if err := netlink.IpsetCreate(s.Name, s.Type, o); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("creating ipset %s (%s): %w", s.Name, s.Type, err)
	}
	return nil
}

// setMember adds (or deletes) a member given as ipset prints it.
func setMember(s *IPSet, member string, add bool) error {
	e, err := entryOf(s.Type, member)
	if err != nil {
		return fmt.Errorf("ipset %s: member %q: %w", s.Name, member, err)
	}
	switch {
	case s.Type == "bitmap:port":
		err = bitmapPort(s.Name, *e.Port, add)
	case add:
		e.Replace = true
		err = netlink.IpsetAdd(s.Name, e)
	default:
		err = netlink.IpsetDel(s.Name, e)
	}
	if err != nil {
		verb := map[bool]string{true: "adding", false: "removing"}[add]
		return fmt.Errorf("%s %s in ipset %s: %w", verb, member, s.Name, err)
	}
	return nil
}

// bitmapPort adds (or deletes) a port of a bitmap:port set. The kernel
// takes a bare port there, and netlink.IpsetAdd always sends a protocol
// with a port, which the set's attribute policy refuses; the message is
// the one it builds, less that attribute.
func bitmapPort(set string, port uint16, add bool) error {
	cmd := nl.IPSET_CMD_ADD
	if !add {
		cmd = nl.IPSET_CMD_DEL
	}
	req := nl.NewNetlinkRequest(cmd|(unix.NFNL_SUBSYS_IPSET<<8), nl.GetIpsetFlags(cmd))
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_NETLINK), Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(set)))
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	buf := binary.BigEndian.AppendUint16(nil, port)
	data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PORT|int(nl.NLA_F_NET_BYTEORDER), buf))
	data.AddChild(&nl.Uint32Attribute{Type: nl.IPSET_ATTR_LINENO | nl.NLA_F_NET_BYTEORDER, Value: 0})
	req.AddData(data)
	_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if errno, ok := err.(syscall.Errno); ok && int(errno) >= nl.IPSET_ERR_PRIVATE {
		err = nl.IPSetError(uintptr(errno))
	}
	return err
}

// entryOf reads a member of a set type: "30080"; "10.96.0.1";
// "10.96.0.1,tcp:443"; "10.244.1.5,tcp:8080,10.244.1.5";
// "1.2.3.4,tcp:80,10.0.0.0/8".
func entryOf(typ, member string) (*netlink.IPSetEntry, error) {
	e := &netlink.IPSetEntry{}
	f := strings.Split(member, ",")
	port := func(s string) error {
		proto, num, ok := strings.Cut(s, ":")
		if !ok {
			num, proto = proto, "tcp"
		}
		n, err := strconv.ParseUint(num, 10, 16)
		if err != nil {
			return fmt.Errorf("port %q", s)
		}
		pn, ok := map[string]uint8{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP, "sctp": unix.IPPROTO_SCTP}[proto]
		if !ok {
			return fmt.Errorf("protocol %q", proto)
		}
		p16 := uint16(n)
		e.Port, e.Protocol = &p16, &pn
		return nil
	}
	ip := func(s string) (net.IP, uint8, error) {
		if pf, err := netip.ParsePrefix(s); err == nil {
			return pf.Addr().AsSlice(), uint8(pf.Bits()), nil
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, 0, fmt.Errorf("address %q", s)
		}
		return a.AsSlice(), 0, nil
	}
	var err error
	switch {
	case typ == "bitmap:port" && len(f) == 1:
		err = port(f[0])
		e.Protocol = nil
	case typ == "hash:ip" && len(f) == 1:
		e.IP, _, err = ip(f[0])
	case typ == "hash:ip,port" && len(f) == 2:
		if e.IP, _, err = ip(f[0]); err == nil {
			err = port(f[1])
		}
	case (typ == "hash:ip,port,ip" || typ == "hash:ip,port,net") && len(f) == 3:
		if e.IP, _, err = ip(f[0]); err == nil {
			if err = port(f[1]); err == nil {
				e.IP2, e.CIDR2, err = ip(f[2])
			}
		}
	default:
		return nil, fmt.Errorf("not a member of a %s set", typ)
	}
	return e, err
}

// typeOfSet is the type of one of kube-proxy's sets by its name.
func typeOfSet(name string) string {
	for _, k := range setKinds {
		if name == k.name || name == familySetName(k.name, "IPv6") {
			return k.typ
		}
	}
	return ""
}
