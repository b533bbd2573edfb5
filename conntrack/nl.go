//go:build linux

package conntrack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ctnetlink message types (linux/netfilter/nfnetlink_conntrack.h); the
// netlink type is NFNL_SUBSYS_CTNETLINK<<8 | these.
const (
	subsysCTNetlink = 1
	ctMsgNew        = 0
	ctMsgGet        = 1
	ctMsgDelete     = 2
	ctMsgGetStats   = 5
)

// Netlink error-message flags (linux/netlink.h).
const (
	nlmFCapped  = 0x100
	nlmFAckTLVs = 0x200
	nlmsgerrMsg = 1 // NLMSGERR_ATTR_MSG
)

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

// nlSocket is a NETLINK_NETFILTER socket. It belongs to the network
// namespace of the thread that opened it, whatever thread uses it later.
type nlSocket struct {
	f   *os.File
	rc  syscall.RawConn
	seq uint32
	buf []byte
}

// openSocket opens a netlink socket in the calling thread's namespace.
func openSocket() (*nlSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("open netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind netlink socket: %w", err)
	}
	// Best effort: short acks, and error messages from the kernel.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	f := os.NewFile(uintptr(fd), "netlink-netfilter")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	return &nlSocket{f: f, rc: rc, buf: make([]byte, 64<<10)}, nil
}

func (s *nlSocket) close() error { return s.f.Close() }

// appendMessage appends one ctnetlink request to dst and returns it with
// the request's sequence number.
func (s *nlSocket) appendMessage(dst []byte, msgType uint8, flags uint16, family uint8, attrs []byte) ([]byte, uint32) {
	s.seq++
	n := unix.NLMSG_HDRLEN + 4 + len(attrs)
	ne := binary.NativeEndian
	dst = ne.AppendUint32(dst, uint32(n))
	dst = ne.AppendUint16(dst, subsysCTNetlink<<8|uint16(msgType))
	dst = ne.AppendUint16(dst, unix.NLM_F_REQUEST|flags)
	dst = ne.AppendUint32(dst, s.seq)
	dst = ne.AppendUint32(dst, 0)
	dst = append(dst, family, unix.NFNETLINK_V0, 0, 0)
	dst = append(dst, attrs...)
	for n%4 != 0 {
		dst = append(dst, 0)
		n++
	}
	return dst, s.seq
}

// watch makes blocking socket calls return when ctx ends; call the
// returned func when done.
func (s *nlSocket) watch(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, func() { _ = s.f.SetDeadline(time.Unix(1, 0)) })
}

func (s *nlSocket) send(ctx context.Context, b []byte) error {
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("netlink send: %w", err)
	}
	return nil
}

// nlMsg is one received netlink message.
type nlMsg struct {
	unix.NlMsghdr
	payload []byte // after the netlink header; only valid during the callback
}

// receive reads messages, one datagram at a time, and hands each to fn
// until fn reports done or fails. ctx ends the wait.
func (s *nlSocket) receive(ctx context.Context, fn func(m nlMsg) (done bool, err error)) error {
	for {
		var n, rflags int
		var rerr error
		err := s.rc.Read(func(fd uintptr) bool {
			n, _, rflags, _, rerr = unix.Recvmsg(int(fd), s.buf, nil, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("netlink receive: %w", err)
		}
		if rflags&unix.MSG_TRUNC != 0 {
			return fmt.Errorf("netlink receive: message longer than %d bytes", len(s.buf))
		}
		b := s.buf[:n]
		for len(b) > 0 {
			if len(b) < unix.NLMSG_HDRLEN {
				return fmt.Errorf("netlink receive: %d stray bytes", len(b))
			}
			var m nlMsg
			ne := binary.NativeEndian
			m.Len, m.Type, m.Flags = ne.Uint32(b), ne.Uint16(b[4:]), ne.Uint16(b[6:])
			m.Seq, m.Pid = ne.Uint32(b[8:]), ne.Uint32(b[12:])
			if m.Len < unix.NLMSG_HDRLEN || int(m.Len) > len(b) {
				return fmt.Errorf("netlink receive: bad message length %d", m.Len)
			}
			m.payload = b[unix.NLMSG_HDRLEN:m.Len]
			b = b[min(len(b), int(m.Len+3)&^3):]
			done, err := fn(m)
			if err != nil || done {
				return err
			}
		}
	}
}

// status decodes an NLMSG_ERROR (ack when nil) or NLMSG_DONE message.
func (m nlMsg) status() error {
	if len(m.payload) < 4 {
		return nil
	}
	code := int32(binary.NativeEndian.Uint32(m.payload))
	if code == 0 {
		return nil
	}
	ke := &KernelError{Errno: unix.Errno(-code)}
	if m.Type == unix.NLMSG_ERROR && m.Flags&nlmFAckTLVs != 0 && len(m.payload) >= 4+unix.NLMSG_HDRLEN {
		off := 4 + unix.NLMSG_HDRLEN
		if m.Flags&nlmFCapped == 0 {
			off = 4 + int(binary.NativeEndian.Uint32(m.payload[4:]))
		}
		ke.Message = extAckMessage(m.payload[min(off, len(m.payload)):])
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

// ack sends one request and waits for its acknowledgement, passing any
// other message for it to fn (which may be nil).
func (s *nlSocket) ack(ctx context.Context, msgType uint8, family uint8, attrs []byte, fn func(nlMsg) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer s.watch(ctx)()
	req, seq := s.appendMessage(nil, msgType, unix.NLM_F_ACK, family, attrs)
	if err := s.send(ctx, req); err != nil {
		return err
	}
	return s.receive(ctx, func(m nlMsg) (bool, error) {
		if m.Seq != seq {
			return false, nil
		}
		switch m.Type {
		case unix.NLMSG_ERROR:
			return true, m.status()
		case unix.NLMSG_NOOP, unix.NLMSG_DONE:
			return false, nil
		}
		if fn == nil {
			return false, nil
		}
		return false, fn(m)
	})
}

// isKernelError reports whether err came from the kernel.
func isKernelError(err error) bool {
	var ke *KernelError
	return errors.As(err, &ke)
}
