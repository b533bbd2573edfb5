// Package ipvsnetlink is the part of ipvs mode's readers and writers
// that talks to the kernel over netlink, in the network namespace of the
// calling thread: the IPVS table read over generic netlink (the family
// looked up by name, the virtual servers dumped, each one's real servers
// dumped), kube-ipvs0's addresses read over rtnetlink, and the writes'
// connections (Conn: kube-ipvs0 made, addresses bound and unbound; the
// ipsets' messages, which the caller builds, sent over netfilter
// netlink). The virtual servers are written by github.com/moby/ipvs,
// not here.
//
// Everything it asks of the kernel goes through a Dialer, whose Sockets
// send one request datagram and receive reply datagrams: Kernel is the
// real one (a netlink socket of the calling thread's namespace); the
// package ipvsnetlinktest records a real conversation and plays it back,
// so that the decoding and the writes' messages above can be tested
// without root. A read loads nothing (no modprobe ip_vs) and changes
// nothing.
package ipvsnetlink

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
)

// Socket is one netlink socket: the seam between the readers and the
// kernel.
type Socket interface {
	// Send sends one request datagram (a netlink message whose sequence
	// number and port ID are set).
	Send(req []byte) error
	// Receive returns the next reply datagram, which may hold several
	// messages; the caller keeps it.
	Receive() ([]byte, error)
	// PID is the socket's netlink port ID.
	PID() uint32
	Close() error
}

// The netlink protocols the readers dial.
const (
	ProtoRoute   = 0  // NETLINK_ROUTE
	ProtoGeneric = 16 // NETLINK_GENERIC
)

// Dialer opens Sockets of a netlink protocol (ProtoRoute, ProtoGeneric).
type Dialer interface {
	Dial(protocol int) (Socket, error)
}

// Kernel dials the kernel of the calling thread's network namespace.
type Kernel struct{}

// dial opens a netlink.Conn over a Socket of d.
func dial(d Dialer, protocol int) (*netlink.Conn, error) {
	s, err := d.Dial(protocol)
	if err != nil {
		return nil, err
	}
	return netlink.NewConn(adapter{s}, s.PID()), nil
}

// adapter is a Socket as github.com/mdlayher/netlink's Conn takes it, so
// that the Conn's sequencing, multipart handling and error decoding are
// the ones of the real path and of the played-back one alike.
type adapter struct{ s Socket }

func (a adapter) Close() error { return a.s.Close() }

func (a adapter) Send(m netlink.Message) error {
	b, err := m.MarshalBinary()
	if err != nil {
		return fmt.Errorf("marshalling a netlink request: %w", err)
	}
	return a.s.Send(b)
}

func (a adapter) SendMessages(ms []netlink.Message) error {
	var b []byte
	for _, m := range ms {
		mb, err := m.MarshalBinary()
		if err != nil {
			return fmt.Errorf("marshalling a netlink request: %w", err)
		}
		b = append(b, mb...)
	}
	return a.s.Send(b)
}

func (a adapter) Receive() ([]netlink.Message, error) {
	b, err := a.s.Receive()
	if err != nil {
		return nil, err
	}
	return Split(b)
}

// headerLen is the length of struct nlmsghdr.
const headerLen = 16

// ErrTruncated is the error of a datagram that ends inside a message.
var ErrTruncated = errors.New("truncated netlink datagram")

// Split parses a datagram into its messages, their data slices of b (no
// copy).
func Split(b []byte) ([]netlink.Message, error) {
	var ms []netlink.Message
	for off := 0; off < len(b); {
		if len(b)-off < headerLen {
			return nil, fmt.Errorf("%w: %d bytes left at offset %d, a header is %d", ErrTruncated, len(b)-off, off, headerLen)
		}
		h := b[off:]
		n := int(binary.NativeEndian.Uint32(h))
		if n < headerLen || n > len(h) {
			return nil, fmt.Errorf("%w: a message of %d bytes at offset %d, %d left", ErrTruncated, n, off, len(h))
		}
		ms = append(ms, netlink.Message{
			Header: netlink.Header{
				Length:   uint32(n),
				Type:     netlink.HeaderType(binary.NativeEndian.Uint16(h[4:])),
				Flags:    netlink.HeaderFlags(binary.NativeEndian.Uint16(h[6:])),
				Sequence: binary.NativeEndian.Uint32(h[8:]),
				PID:      binary.NativeEndian.Uint32(h[12:]),
			},
			Data: h[headerLen:n:n],
		})
		off += min((n+3)&^3, len(h))
	}
	return ms, nil
}
