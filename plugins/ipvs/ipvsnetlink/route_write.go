package ipvsnetlink

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
)

// AddLink makes an interface of a kind ("dummy", as kube-proxy makes
// kube-ipvs0), over an rtnetlink connection; EEXIST when there is one of
// the name.
func (c *Conn) AddLink(name, kind string) error {
	ae := netlink.NewAttributeEncoder()
	ae.String(iflaIfname, name)
	ae.Nested(iflaLinkinfo, func(nae *netlink.AttributeEncoder) error {
		nae.String(iflaInfoKind, kind)
		return nil
	})
	attrs, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("asking for %s: %w", name, err)
	}
	_, err = c.execute(netlink.Message{
		Header: netlink.Header{Type: rtmNewLink, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   append(make([]byte, ifinfomsgLen), attrs...),
	})
	return err
}

// Addr binds (add) or unbinds an address on the interface of index, as
// ip addr add and del do: the address as the local one and, for IPv4, as
// the peer's too (an interface not point-to-point). Binding a bound one
// is EEXIST; unbinding one not bound is EADDRNOTAVAIL.
func (c *Conn) Addr(add bool, index int, p netip.Prefix) error {
	a := p.Addr()
	h := make([]byte, ifaddrmsgLen)
	h[0], h[1] = 2, byte(p.Bits()) // AF_INET
	if a.Is6() {
		h[0] = 10 // AF_INET6
	}
	binary.NativeEndian.PutUint32(h[4:], uint32(index))
	ae := netlink.NewAttributeEncoder()
	if a.Is4() {
		ae.Bytes(ifaLocal, a.AsSlice())
	}
	ae.Bytes(ifaAddress, a.AsSlice())
	attrs, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("asking for %s: %w", p, err)
	}
	m := netlink.Message{Header: netlink.Header{Type: rtmDelAddr, Flags: netlink.Request | netlink.Acknowledge}, Data: append(h, attrs...)}
	if add {
		m.Header.Type, m.Header.Flags = rtmNewAddr, m.Header.Flags|netlink.Create|netlink.Excl
	}
	_, err = c.execute(m)
	return err
}
