//go:build linux

package ipvsnetlink

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Dial opens a netlink socket of protocol in the calling thread's network
// namespace (a netlink socket belongs to the namespace it is made in).
func (Kernel) Dial(protocol int) (Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, protocol)
	if err != nil {
		return nil, fmt.Errorf("opening a netlink socket of protocol %d: %w", protocol, os.NewSyscallError("socket", err))
	}
	s := &socket{fd: fd}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding a netlink socket: %w", os.NewSyscallError("bind", err))
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("naming a netlink socket: %w", os.NewSyscallError("getsockname", err))
	}
	if nl, ok := sa.(*unix.SockaddrNetlink); ok {
		s.pid = nl.Pid
	}
	return s, nil
}

// socket is a blocking netlink socket: the readers call it from a thread
// locked in a namespace, one request at a time.
type socket struct {
	fd  int
	pid uint32
}

func (s *socket) PID() uint32 { return s.pid }

func (s *socket) Close() error { return unix.Close(s.fd) }

func (s *socket) Send(req []byte) error {
	return os.NewSyscallError("sendto", unix.Sendto(s.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
}

// Receive reads one datagram into a buffer of its size: it peeks first,
// as github.com/mdlayher/netlink does, so that nothing is cut.
func (s *socket) Receive() ([]byte, error) {
	b := make([]byte, os.Getpagesize())
	for {
		n, _, err := unix.Recvfrom(s.fd, b, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom", err)
		}
		if n <= len(b) {
			break
		}
		b = make([]byte, n)
	}
	for {
		n, _, err := unix.Recvfrom(s.fd, b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom", err)
		}
		return b[:n], nil
	}
}
