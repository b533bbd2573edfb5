//go:build linux

package ctnetlink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ctnetlink message types (linux/netfilter/nfnetlink_conntrack.h); the
// netlink type is NFNL_SUBSYS_CTNETLINK<<8 | these.
const (
	SubsysCTNetlink = 1
	MsgNew          = 0 // IPCTNL_MSG_CT_NEW
	MsgGet          = 1 // IPCTNL_MSG_CT_GET
	MsgDelete       = 2 // IPCTNL_MSG_CT_DELETE
	MsgGetStats     = 5 // IPCTNL_MSG_CT_GET_STATS
)

// Netlink error-message flags (linux/netlink.h).
const (
	nlmFCapped  = 0x100
	nlmFAckTLVs = 0x200
	nlmsgerrMsg = 1 // NLMSGERR_ATTR_MSG
)

// Transport carries datagrams between a Conn and the kernel. It is the
// seam: Socket is the kernel, package ctnetlinktest records and plays
// back.
type Transport interface {
	// Send sends one datagram of one or more netlink messages.
	Send(ctx context.Context, b []byte) error
	// Receive returns the next datagram. It stays valid until the next
	// call to Receive.
	Receive(ctx context.Context) ([]byte, error)
	// Close releases the transport.
	Close() error
}

// KernelError is an error the kernel answered a request with; it unwraps
// to the errno (unix.ENOENT, unix.EEXIST, ...).
type KernelError struct {
	Errno   unix.Errno
	Message string // extended ack message, if the kernel gave one
}

func (e *KernelError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v (%s)", e.Errno, e.Message)
	}
	return e.Errno.Error()
}

func (e *KernelError) Unwrap() error { return e.Errno }

// IsKernelError reports whether err came from the kernel.
func IsKernelError(err error) bool {
	var ke *KernelError
	return errors.As(err, &ke)
}

// Conn sends ctnetlink requests over a Transport and reads their
// answers. It is not safe for concurrent use.
type Conn struct {
	t   Transport
	seq uint32
}

// NewConn makes a Conn over t. Sequence numbers start at 1.
func NewConn(t Transport) *Conn { return &Conn{t: t} }

// Close closes the transport.
func (c *Conn) Close() error { return c.t.Close() }

// AppendRequest appends one ctnetlink request to dst and returns it with
// the request's sequence number. flags are added to NLM_F_REQUEST.
func (c *Conn) AppendRequest(dst []byte, msgType uint8, flags uint16, family uint8, attrs []byte) ([]byte, uint32) {
	c.seq++
	n := unix.NLMSG_HDRLEN + 4 + len(attrs)
	ne := binary.NativeEndian
	dst = ne.AppendUint32(dst, uint32(n))
	dst = ne.AppendUint16(dst, SubsysCTNetlink<<8|uint16(msgType))
	dst = ne.AppendUint16(dst, unix.NLM_F_REQUEST|flags)
	dst = ne.AppendUint32(dst, c.seq)
	dst = ne.AppendUint32(dst, 0)
	dst = append(dst, family, unix.NFNETLINK_V0, 0, 0)
	dst = append(dst, attrs...)
	for n%4 != 0 {
		dst = append(dst, 0)
		n++
	}
	return dst, c.seq
}

// Send sends a datagram of requests made by AppendRequest.
func (c *Conn) Send(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.t.Send(ctx, b); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("netlink send: %w", err)
	}
	return nil
}

// Message is one received netlink message.
type Message struct {
	unix.NlMsghdr
	// Payload is what follows the netlink header; it is valid only
	// during the callback that gets it.
	Payload []byte
}

// Receive reads datagrams and hands each of their messages to fn until
// fn reports done or fails. ctx ends the wait.
func (c *Conn) Receive(ctx context.Context, fn func(m Message) (done bool, err error)) error {
	for {
		b, err := c.t.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("netlink receive: %w", err)
		}
		done, err := eachMessage(b, fn)
		if err != nil || done {
			return err
		}
	}
}

// eachMessage splits a datagram into messages and hands them to fn.
func eachMessage(b []byte, fn func(m Message) (done bool, err error)) (bool, error) {
	ne := binary.NativeEndian
	for len(b) > 0 {
		if len(b) < unix.NLMSG_HDRLEN {
			return true, fmt.Errorf("netlink receive: %d stray bytes", len(b))
		}
		var m Message
		m.Len, m.Type, m.Flags = ne.Uint32(b), ne.Uint16(b[4:]), ne.Uint16(b[6:])
		m.Seq, m.Pid = ne.Uint32(b[8:]), ne.Uint32(b[12:])
		if m.Len < unix.NLMSG_HDRLEN || int(m.Len) > len(b) {
			return true, fmt.Errorf("netlink receive: bad message length %d (%d bytes left)", m.Len, len(b))
		}
		m.Payload = b[unix.NLMSG_HDRLEN:m.Len]
		b = b[min(len(b), int(m.Len+3)&^3):]
		done, err := fn(m)
		if err != nil || done {
			return true, err
		}
	}
	return false, nil
}

// Status decodes an NLMSG_ERROR (an ack when nil) or NLMSG_DONE message.
func (m Message) Status() error {
	if len(m.Payload) < 4 {
		return nil
	}
	code := int32(binary.NativeEndian.Uint32(m.Payload))
	if code == 0 {
		return nil
	}
	ke := &KernelError{Errno: unix.Errno(-code)}
	if m.Type == unix.NLMSG_ERROR && m.Flags&nlmFAckTLVs != 0 && len(m.Payload) >= 4+unix.NLMSG_HDRLEN {
		off := 4 + unix.NLMSG_HDRLEN
		if m.Flags&nlmFCapped == 0 {
			off = 4 + int(binary.NativeEndian.Uint32(m.Payload[4:]))
		}
		ke.Message = extAckMessage(m.Payload[min(off, len(m.Payload)):])
	}
	return ke
}

// extAckMessage finds NLMSGERR_ATTR_MSG among the ack's attributes.
func extAckMessage(b []byte) string {
	for len(b) >= 4 {
		l, t := int(binary.NativeEndian.Uint16(b)), binary.NativeEndian.Uint16(b[2:])
		if l < 4 || l > len(b) {
			return ""
		}
		if t&0x3fff == nlmsgerrMsg {
			return string(bytes.TrimRight(b[4:l], "\x00"))
		}
		b = b[min(len(b), (l+3)&^3):]
	}
	return ""
}

// Ack sends one request and waits for its acknowledgement, passing any
// other message answering it to fn (which may be nil). A refusal is a
// *KernelError.
func (c *Conn) Ack(ctx context.Context, msgType uint8, family uint8, attrs []byte, fn func(Message) error) error {
	req, seq := c.AppendRequest(nil, msgType, unix.NLM_F_ACK, family, attrs)
	if err := c.Send(ctx, req); err != nil {
		return err
	}
	return c.Receive(ctx, func(m Message) (bool, error) {
		if m.Seq != seq {
			return false, nil
		}
		switch m.Type {
		case unix.NLMSG_ERROR:
			return true, m.Status()
		case unix.NLMSG_NOOP, unix.NLMSG_DONE:
			return false, nil
		}
		if fn == nil {
			return false, nil
		}
		return false, fn(m)
	})
}

// Dump sends a dump request (NLM_F_DUMP) and hands every message
// answering it to fn until the kernel says done; an NLMSG_ERROR ends the
// dump with its error.
func (c *Conn) Dump(ctx context.Context, msgType uint8, family uint8, attrs []byte, fn func(Message) error) error {
	req, seq := c.AppendRequest(nil, msgType, unix.NLM_F_DUMP, family, attrs)
	if err := c.Send(ctx, req); err != nil {
		return err
	}
	return c.Receive(ctx, func(m Message) (bool, error) {
		if m.Seq != seq {
			return false, nil
		}
		switch m.Type {
		case unix.NLMSG_DONE, unix.NLMSG_ERROR:
			return true, m.Status()
		case unix.NLMSG_NOOP:
			return false, nil
		}
		return false, fn(m)
	})
}
