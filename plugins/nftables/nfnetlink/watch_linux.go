//go:build linux

package nfnetlink

import (
	"context"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Watch calls changed after each datagram of nf_tables' change
// notifications (the NFNLGRP_NFTABLES group, which iptables-nft's writes
// and nftables rulesets both send to) in the network namespace of netns
// (0: the calling thread's), until ctx ends. changed must not block. The
// notifications' contents are not read: a reader that wants the new
// state reads it. Notifications the socket had no room for (ENOBUFS) are
// a change too.
func Watch(ctx context.Context, netns int, changed func()) error {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: netns})
	if err != nil {
		return fmt.Errorf("nf_tables notifications: %w", err)
	}
	defer c.Close()
	if err := c.JoinGroup(unix.NFNLGRP_NFTABLES); err != nil {
		return fmt.Errorf("nf_tables notifications: joining their group: %w", err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("nf_tables notifications: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for {
				// MSG_TRUNC: a datagram larger than buf is taken as
				// read; only its arrival matters.
				_, _, _, _, rerr = unix.Recvmsg(int(fd), buf, nil, unix.MSG_TRUNC)
				if rerr != unix.EINTR {
					break
				}
			}
			return rerr != unix.EAGAIN && rerr != unix.EWOULDBLOCK
		})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("nf_tables notifications: %w", err)
		case rerr == nil, errors.Is(rerr, unix.ENOBUFS):
			changed()
		default:
			return fmt.Errorf("nf_tables notifications: %w", rerr)
		}
	}
}
