//go:build linux

package nfnetlink

import (
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NetNS dials the kernel's nf_tables in a network namespace: the one of
// the file descriptor, or, when 0, the calling thread's.
type NetNS int

// Dial opens a NETLINK_NETFILTER socket in the namespace.
func (n NetNS) Dial() (Transport, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: int(n)})
	if err != nil {
		return nil, err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	return &socket{c: c, rc: rc}, nil
}

// Sockets is 4: a read dumps the elements of the sets over up to 4
// sockets at once.
func (NetNS) Sockets() int { return 4 }

// socket is a real netlink socket, read and written through its file
// descriptor: no copy beyond the kernel's.
type socket struct {
	c  *netlink.Conn
	rc syscall.RawConn
}

func (s *socket) PID() uint32  { return s.c.PID() }
func (s *socket) Close() error { return s.c.Close() }

func (s *socket) Send(req []byte) error {
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		for {
			serr = unix.Sendto(int(fd), req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
			if serr != unix.EINTR {
				break
			}
		}
		return serr != unix.EAGAIN && serr != unix.EWOULDBLOCK
	})
	if err != nil {
		return err
	}
	return serr
}

func (s *socket) Recv(buf []byte) (int, error) {
	var n, flags int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			n, _, flags, _, rerr = unix.Recvmsg(int(fd), buf, nil, 0)
			if rerr != unix.EINTR {
				break
			}
		}
		return rerr != unix.EAGAIN && rerr != unix.EWOULDBLOCK
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case flags&unix.MSG_TRUNC != 0:
		return 0, fmt.Errorf("a reply larger than %d bytes", len(buf))
	}
	return n, nil
}
