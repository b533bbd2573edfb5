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

	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// The ipsets' writes: kube-proxy's sets made as it makes them, and their
// members added and deleted, over a netfilter netlink connection
// (ipvsnetlink.Conn: the kernel, or a recording of it). The messages are
// github.com/vishvananda/netlink's.

// ipsetRequest is the start of an ipset command's message, as
// github.com/vishvananda/netlink makes it: the netfilter header and the
// protocol's version, then the set's name.
func ipsetRequest(cmd int, set string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(cmd|(unix.NFNL_SUBSYS_IPSET<<8), nl.GetIpsetFlags(cmd))
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_NETLINK), Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(set)))
	return req
}

// ipsetDo sends an ipset command: ipset's own errors (IPSET_ERR_*) are
// named.
func ipsetDo(c *ipvsnetlink.Conn, req *nl.NetlinkRequest) error {
	err := c.Do(req.Serialize())
	var errno syscall.Errno
	if errors.As(err, &errno) && int(errno) >= nl.IPSET_ERR_PRIVATE {
		err = nl.IPSetError(uintptr(errno))
	}
	return err
}

// setRevision is the revision of one of kube-proxy's set types (without
// counters, comments or skbinfo), as github.com/vishvananda/netlink
// gives it: 0 for a type it names none of.
func setRevision(typ string) uint8 {
	switch typ {
	case "hash:ip", "hash:ip,port", "hash:ip,port,ip":
		return 1
	case "hash:ip,port,net":
		return 2
	}
	return 0
}

// createSet creates a set as kube-proxy does (hashes of up to 65536
// members, the bitmap of all ports).
func createSet(c *ipvsnetlink.Conn, s *IPSet) error {
	req := ipsetRequest(nl.IPSET_CMD_CREATE, s.Name)
	req.Flags |= unix.NLM_F_EXCL
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_TYPENAME, nl.ZeroTerminated(s.Type)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_REVISION, nl.Uint8Attr(setRevision(s.Type))))
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	family := uint8(unix.AF_INET)
	switch {
	case s.Type == "bitmap:port":
		// A bitmap has its range, no family and no size limit.
		family = 0
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PORT_FROM|int(nl.NLA_F_NET_BYTEORDER), []byte{0, 0}))
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PORT_TO|int(nl.NLA_F_NET_BYTEORDER), []byte{0xff, 0xff}))
	case s.Family == "inet6":
		family = unix.AF_INET6
	}
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_FAMILY, nl.Uint8Attr(family)))
	if s.Type != "bitmap:port" {
		data.AddChild(&nl.Uint32Attribute{Type: nl.IPSET_ATTR_MAXELEM | nl.NLA_F_NET_BYTEORDER, Value: 65536})
	}
	req.AddData(data)
	if err := ipsetDo(c, req); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("creating ipset %s (%s): %w", s.Name, s.Type, err)
	}
	return nil
}

// destroySet destroys a set; one already gone is no error.
func destroySet(c *ipvsnetlink.Conn, name string) error {
	if err := ipsetDo(c, ipsetRequest(nl.IPSET_CMD_DESTROY, name)); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("destroying ipset %s: %w", name, err)
	}
	return nil
}

// setMember adds (or deletes) a member given as ipset prints it; an
// added member replaces one that is there.
func setMember(c *ipvsnetlink.Conn, s *IPSet, member string, add bool) error {
	e, err := entryOf(s.Type, member)
	if err != nil {
		return fmt.Errorf("ipset %s: member %q: %w", s.Name, member, err)
	}
	cmd := nl.IPSET_CMD_ADD
	if !add {
		cmd = nl.IPSET_CMD_DEL
	}
	req := ipsetRequest(cmd, s.Name)
	if !add && s.Type != "bitmap:port" {
		// A member not there is an error (a bitmap's port, as before,
		// is not).
		req.Flags |= unix.NLM_F_EXCL
	}
	req.AddData(entryData(e))
	if err := ipsetDo(c, req); err != nil {
		verb := map[bool]string{true: "adding", false: "removing"}[add]
		return fmt.Errorf("%s %s in ipset %s: %w", verb, member, s.Name, err)
	}
	return nil
}

// entryData is a member's attributes, as github.com/vishvananda/netlink
// encodes them, but for a bitmap:port member: the kernel takes a bare
// port there, and the library always sends a protocol with a port,
// which the set's attribute policy refuses.
func entryData(e *netlink.IPSetEntry) *nl.RtAttr {
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	ip := func(typ int, a net.IP) {
		t, b := nl.IPSET_ATTR_IPADDR_IPV4, a.To4()
		if b == nil {
			t, b = nl.IPSET_ATTR_IPADDR_IPV6, a.To16()
		}
		data.AddChild(nl.NewRtAttr(typ|int(nl.NLA_F_NESTED), nl.NewRtAttr(t|int(nl.NLA_F_NET_BYTEORDER), b).Serialize()))
	}
	if e.IP != nil {
		ip(nl.IPSET_ATTR_IP, e.IP)
	}
	if e.IP2 != nil {
		ip(nl.IPSET_ATTR_IP2, e.IP2)
	}
	if e.CIDR2 != 0 {
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_CIDR2, nl.Uint8Attr(e.CIDR2)))
	}
	if e.Port != nil {
		if e.Protocol != nil {
			data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PROTO, nl.Uint8Attr(*e.Protocol)))
		}
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PORT|int(nl.NLA_F_NET_BYTEORDER), binary.BigEndian.AppendUint16(nil, *e.Port)))
	}
	data.AddChild(&nl.Uint32Attribute{Type: nl.IPSET_ATTR_LINENO | nl.NLA_F_NET_BYTEORDER, Value: 0})
	return data
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
