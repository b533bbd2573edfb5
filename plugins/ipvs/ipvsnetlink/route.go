package ipvsnetlink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
)

// ErrNoLink is the error of a look-up of an interface name there is no
// interface of.
var ErrNoLink = errors.New("no such network interface")

// Link is an interface and its address messages (RTM_NEWADDR: struct
// ifaddrmsg, then its attributes), in the order the kernel dumped them.
type Link struct {
	Index int
	Addrs []netlink.Message
}

// Lengths of struct ifinfomsg and struct ifaddrmsg, and rtnetlink's
// message types and attributes (include/uapi/linux/rtnetlink.h,
// if_link.h, if_addr.h).
const (
	ifinfomsgLen = 16
	ifaddrmsgLen = 8

	rtmNewLink = 16
	rtmGetLink = 18
	rtmNewAddr = 20
	rtmDelAddr = 21
	rtmGetAddr = 22

	iflaIfname   = 3
	iflaLinkinfo = 18
	iflaInfoKind = 1

	ifaAddress = 1
	ifaLocal   = 2
)

// Addrs looks the interface name up over rtnetlink and dumps the
// addresses on it, as ip addr show dev NAME does: the link by name, then
// all addresses, kept when they are the link's.
func Addrs(d Dialer, name string) (*Link, error) {
	c, err := Open(d, ProtoRoute)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	index, err := c.LinkIndex(name)
	if err != nil {
		return nil, err
	}
	l := &Link{Index: index}
	msgs, err := c.execute(netlink.Message{
		Header: netlink.Header{Type: rtmGetAddr, Flags: netlink.Request | netlink.Dump},
		Data:   make([]byte, ifaddrmsgLen),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of %s: %w", name, err)
	}
	for _, m := range msgs {
		if m.Header.Type != rtmNewAddr || len(m.Data) < ifaddrmsgLen {
			return nil, fmt.Errorf("listing the addresses of %s: a message of type %d and %d bytes", name, m.Header.Type, len(m.Data))
		}
		if int(binary.NativeEndian.Uint32(m.Data[4:])) == l.Index {
			l.Addrs = append(l.Addrs, m)
		}
	}
	return l, nil
}

// LinkIndex is the index of the interface name (ErrNoLink when there is
// none), over an rtnetlink connection.
func (c *Conn) LinkIndex(name string) (int, error) {
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: iflaIfname, Data: append([]byte(name), 0)}})
	if err != nil {
		return 0, fmt.Errorf("asking for %s: %w", name, err)
	}
	links, err := c.execute(netlink.Message{
		Header: netlink.Header{Type: rtmGetLink, Flags: netlink.Request},
		Data:   append(make([]byte, ifinfomsgLen), attrs...),
	})
	if errors.Is(err, syscall.ENODEV) {
		return 0, fmt.Errorf("%s: %w", name, ErrNoLink)
	}
	if err != nil {
		return 0, fmt.Errorf("looking up %s: %w", name, err)
	}
	if len(links) != 1 || links[0].Header.Type != rtmNewLink || len(links[0].Data) < ifinfomsgLen {
		return 0, fmt.Errorf("looking up %s: %d messages, not one link", name, len(links))
	}
	return int(int32(binary.NativeEndian.Uint32(links[0].Data[4:]))), nil
}
