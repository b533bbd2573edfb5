//go:build linux

package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The ipsets' writes: kube-proxy's sets made as it makes them, and their
// members added and deleted over netlink.

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
