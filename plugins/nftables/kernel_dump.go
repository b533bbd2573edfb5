//go:build linux

package nftables

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// dumper runs nf_tables dump requests on one netlink socket. It receives
// into one buffer it reuses and copies the replies it hands on into an
// arena of large chunks: a node's thousands of set dumps, most of a few
// hundred bytes, would otherwise cost a page-sized buffer each.
type dumper struct {
	c     *netlink.Conn
	rc    syscall.RawConn
	buf   []byte
	arena []byte
}

// recvSize is the receive buffer; the kernel fills at most 32 KiB per
// read of a dump.
const recvSize = 64 << 10

// arenaChunk is the size of the arena's chunks.
const arenaChunk = 1 << 20

func newDumper(c *netlink.Conn) (*dumper, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &dumper{c: c, rc: rc, buf: make([]byte, recvSize)}, nil
}

// keep copies b into the arena.
func (d *dumper) keep(b []byte) []byte {
	if cap(d.arena)-len(d.arena) < len(b) {
		d.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	n := len(d.arena)
	d.arena = append(d.arena, b...)
	return d.arena[n:len(d.arena):len(d.arena)]
}

// dump sends one dump request and calls fn with each reply, whose data
// stays valid after.
func (d *dumper) dump(msg uint16, family uint8, attrs []byte, fn func(netlink.Message) error) error {
	req, err := d.c.Send(netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msg),
			Flags: netlink.Request | netlink.Dump,
		},
		Data: append([]byte{family, unix.NFNETLINK_V0, 0, 0}, attrs...),
	})
	if err != nil {
		return err
	}
	for {
		n, err := d.recv()
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(d.buf[:n])
		if err != nil {
			return fmt.Errorf("netlink reply: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != req.Header.Sequence {
				continue // a late reply to an earlier request
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return doneError(m.Data)
			case unix.NLMSG_ERROR:
				if err := doneError(m.Data); err != nil {
					return err
				}
				continue
			}
			if err := fn(netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(m.Header.Type),
				Flags: netlink.HeaderFlags(m.Header.Flags), Sequence: m.Header.Seq, PID: m.Header.Pid},
				Data: d.keep(m.Data)}); err != nil {
				return err
			}
		}
	}
}

// recv reads one datagram of replies into the buffer.
func (d *dumper) recv() (int, error) {
	var n, flags int
	var rerr error
	err := d.rc.Read(func(fd uintptr) bool {
		for {
			n, _, flags, _, rerr = unix.Recvmsg(int(fd), d.buf, nil, 0)
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
		return 0, fmt.Errorf("netlink receive: %w", rerr)
	case flags&unix.MSG_TRUNC != 0:
		return 0, fmt.Errorf("netlink receive: a reply larger than %d bytes", len(d.buf))
	}
	return n, nil
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
