//go:build linux

package ctnetlink

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Socket is a NETLINK_NETFILTER socket, the Transport to the kernel. It
// belongs to the network namespace of the thread that opened it,
// whatever thread uses it later. A Socket whose context ended during a
// call is of no further use: close it.
type Socket struct {
	f   *os.File
	rc  syscall.RawConn
	buf []byte
}

// bufSize is the receive buffer: larger than any datagram a dump sends.
const bufSize = 64 << 10

// OpenSocket opens a netlink socket in the calling thread's namespace.
func OpenSocket() (*Socket, error) {
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
	return &Socket{f: f, rc: rc, buf: make([]byte, bufSize)}, nil
}

// Open opens a Socket in the calling thread's namespace, as a Transport.
func Open() (Transport, error) {
	s, err := OpenSocket()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the socket.
func (s *Socket) Close() error { return s.f.Close() }

// watch makes a blocking call return when ctx ends; call the returned
// func when done.
func (s *Socket) watch(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { _ = s.f.SetDeadline(time.Unix(1, 0)) })
}

// Send sends one datagram to the kernel.
func (s *Socket) Send(ctx context.Context, b []byte) error {
	defer s.watch(ctx)()
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	return err
}

// Receive reads one datagram into the socket's buffer and returns it.
func (s *Socket) Receive(ctx context.Context) ([]byte, error) {
	defer s.watch(ctx)()
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
		return nil, err
	}
	if rflags&unix.MSG_TRUNC != 0 {
		return nil, fmt.Errorf("message longer than %d bytes", len(s.buf))
	}
	return s.buf[:n], nil
}
