// Package nfnetlink is the nftables plane's socket to the kernel: a
// NETLINK_NETFILTER socket in a network namespace, the nf_tables requests
// sent on it, and the loop that receives their replies, one datagram at a
// time, keeping those of the request asked (by sequence number) up to
// NLMSG_DONE or an error. What the replies mean is the plane's business
// (plugins/nftables); this package only frames them.
//
// The kernel is reached through a Transport (send a request, receive one
// datagram), which a Dialer opens. NetNS dials the real kernel; the
// nfnetlinktest package plays a recorded conversation back instead, and
// records one, so that the plane's reader is tested without root.
package nfnetlink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
)

// Transport is one netlink socket, as the reader uses it.
type Transport interface {
	// Send sends one request datagram (whole netlink messages).
	Send(req []byte) error
	// Recv receives one reply datagram into buf and returns its length;
	// a datagram larger than buf is an error.
	Recv(buf []byte) (int, error)
	// PID is the socket's netlink port ID, which requests carry.
	PID() uint32
	Close() error
}

// A Dialer opens the sockets of one read of a network namespace.
type Dialer interface {
	// Dial opens a socket.
	Dial() (Transport, error)
	// Sockets is how many sockets a read may use at once; a recorded
	// conversation, which is one sequence of exchanges, has 1.
	Sockets() int
}

// Netlink numbers this package uses (linux/netfilter/nfnetlink.h,
// nf_tables.h, netlink.h), here so that the framing builds anywhere.
const (
	subsysNFTables = 10 // NFNL_SUBSYS_NFTABLES
	msgGetGen      = 16 // NFT_MSG_GETGEN
	attrGenID      = 1  // NFTA_GEN_ID
	nfnetlinkV0    = 0  // NFNETLINK_V0
	nlmsgError     = 2  // NLMSG_ERROR
	nlmsgDone      = 3  // NLMSG_DONE
	headerLen      = 16 // sizeof(struct nlmsghdr)
)

// recvSize is the receive buffer; the kernel fills at most 32 KiB per
// read of a dump.
const recvSize = 64 << 10

// arenaChunk is the size of the arena's chunks.
const arenaChunk = 1 << 20

// Conn runs nf_tables requests on one socket. It receives into one
// buffer it reuses and copies the replies it hands on into an arena of
// large chunks: a node's thousands of set dumps, most of a few hundred
// bytes, would otherwise cost a page-sized buffer each. A Conn serves one
// request at a time.
type Conn struct {
	t     Transport
	buf   []byte
	arena []byte
	seq   uint32
	pid   uint32
}

// NewConn runs requests on t, which it closes on Close.
func NewConn(t Transport) *Conn {
	return &Conn{t: t, buf: make([]byte, recvSize), pid: t.PID()}
}

// Dial opens a socket with d.
func Dial(d Dialer) (*Conn, error) {
	t, err := d.Dial()
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return NewConn(t), nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.t.Close() }

// keep copies b into the arena.
func (c *Conn) keep(b []byte) []byte {
	if cap(c.arena)-len(c.arena) < len(b) {
		c.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	n := len(c.arena)
	c.arena = append(c.arena, b...)
	return c.arena[n:len(c.arena):len(c.arena)]
}

// Dump sends the dump request msg (an NFT_MSG_GET*) of family with the
// attributes attrs, and calls fn with each reply, whose data stays valid
// after, until the kernel's NLMSG_DONE.
func (c *Conn) Dump(msg uint16, family uint8, attrs []byte, fn func(netlink.Message) error) error {
	return c.run(msg, netlink.Request|netlink.Dump, family, attrs, fn)
}

// Get sends the request msg and calls fn with its reply.
func (c *Conn) Get(msg uint16, family uint8, attrs []byte, fn func(netlink.Message) error) error {
	return c.run(msg, netlink.Request, family, attrs, fn)
}

// Generation is the ruleset's generation ID, which every change moves.
func (c *Conn) Generation() (uint32, error) {
	gen, found := uint32(0), false
	err := c.Get(msgGetGen, 0, nil, func(m netlink.Message) error {
		if len(m.Data) < 4 {
			return fmt.Errorf("a generation message of %d bytes", len(m.Data))
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return err
		}
		ad.ByteOrder = binary.BigEndian
		for ad.Next() {
			if ad.Type() == attrGenID {
				gen, found = ad.Uint32(), true
			}
		}
		return ad.Err()
	})
	if err == nil && !found {
		err = errors.New("the kernel's reply holds no generation")
	}
	if err != nil {
		return 0, fmt.Errorf("reading the ruleset's generation: %w", err)
	}
	return gen, nil
}

// request builds the datagram of one nf_tables request.
func (c *Conn) request(msg uint16, flags netlink.HeaderFlags, family uint8, attrs []byte) ([]byte, uint32) {
	c.seq++
	b := make([]byte, headerLen+4, headerLen+4+len(attrs))
	b = append(b, attrs...)
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], subsysNFTables<<8|msg)
	binary.NativeEndian.PutUint16(b[6:], uint16(flags))
	binary.NativeEndian.PutUint32(b[8:], c.seq)
	binary.NativeEndian.PutUint32(b[12:], c.pid)
	b[headerLen], b[headerLen+1] = family, nfnetlinkV0
	return b, c.seq
}

// run sends one request and hands its replies to fn: up to NLMSG_DONE
// for a dump, up to the reply for another request.
func (c *Conn) run(msg uint16, flags netlink.HeaderFlags, family uint8, attrs []byte, fn func(netlink.Message) error) error {
	req, seq := c.request(msg, flags, family, attrs)
	if err := c.t.Send(req); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	dump := flags&netlink.Dump != 0
	for {
		n, err := c.t.Recv(c.buf)
		if err != nil {
			return fmt.Errorf("netlink receive: %w", err)
		}
		done, err := c.handle(c.buf[:n], seq, dump, fn)
		if done || err != nil {
			return err
		}
	}
}

// handle hands the messages of one datagram that answer seq to fn, and
// tells whether they ended the request.
func (c *Conn) handle(b []byte, seq uint32, dump bool, fn func(netlink.Message) error) (bool, error) {
	ended := false
	for len(b) > 0 {
		if len(b) < headerLen {
			return false, fmt.Errorf("netlink reply: %d bytes left, less than a header", len(b))
		}
		n := int(binary.NativeEndian.Uint32(b))
		if n < headerLen || n > len(b) {
			return false, fmt.Errorf("netlink reply: a message of %d bytes in %d", n, len(b))
		}
		h := netlink.Header{Length: uint32(n), Type: netlink.HeaderType(binary.NativeEndian.Uint16(b[4:])),
			Flags:    netlink.HeaderFlags(binary.NativeEndian.Uint16(b[6:])),
			Sequence: binary.NativeEndian.Uint32(b[8:]), PID: binary.NativeEndian.Uint32(b[12:])}
		data := b[headerLen:n]
		b = b[min((n+3)&^3, len(b)):]
		if h.Sequence != seq {
			continue // a late reply to an earlier request
		}
		switch h.Type {
		case nlmsgDone:
			return true, doneError(data)
		case nlmsgError:
			if err := doneError(data); err != nil {
				return true, err
			}
			ended = ended || !dump // an acknowledgement
			continue
		}
		if err := fn(netlink.Message{Header: h, Data: c.keep(data)}); err != nil {
			return true, err
		}
		ended = ended || !dump && h.Flags&netlink.Multi == 0
	}
	return ended, nil
}

// doneError is the error a NLMSG_DONE or NLMSG_ERROR carries (nil: none).
func doneError(b []byte) error {
	if len(b) < 4 {
		return nil
	}
	if code := int32(binary.NativeEndian.Uint32(b)); code < 0 {
		return syscall.Errno(-code)
	}
	return nil
}
