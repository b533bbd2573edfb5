//go:build linux

package ipvsnetlink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// WatchLink calls changed after each change of the addresses of the link
// named name, and when a link of that name comes or goes, in the calling
// thread's network namespace, until ctx ends; changed must not block.
// rtnetlink notifies these changes, so nothing is polled. Notifications
// the socket had no room for (ENOBUFS) are a change too.
func WatchLink(ctx context.Context, name string, changed func()) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return fmt.Errorf("%s's address notifications: %w", name, err)
	}
	defer c.Close()
	for _, g := range []uint32{unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR} {
		if err := c.JoinGroup(g); err != nil {
			return fmt.Errorf("%s's address notifications: joining group %d: %w", name, g, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	// Looked up once joined, so that no change falls in between.
	w := linkWatch{name: name}
	q, err := Open(Kernel{}, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("%s's address notifications: %w", name, err)
	}
	index, err := q.LinkIndex(name)
	q.Close()
	switch {
	case err == nil:
		w.index = int32(index)
	case !errors.Is(err, ErrNoLink):
		return fmt.Errorf("%s's address notifications: %w", name, err)
	}
	for {
		msgs, err := c.Receive()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, unix.ENOBUFS):
			changed()
			continue
		case err != nil:
			return fmt.Errorf("%s's address notifications: %w", name, err)
		}
		if w.concerns(msgs) {
			changed()
		}
	}
}

// linkWatch follows the index of the watched link from the link
// notifications, to tell its address notifications from other links'.
type linkWatch struct {
	name string
	// index is the link's, 0 while there is none.
	index int32
}

// concerns reports whether notifications tell of the watched link: it
// came, went or was renamed, or one of its addresses changed.
func (w *linkWatch) concerns(msgs []netlink.Message) bool {
	told := false
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.RTM_NEWLINK, unix.RTM_DELLINK:
			// ifinfomsg: family, pad, type (2), index (4), flags, change.
			if len(m.Data) < unix.SizeofIfInfomsg {
				continue
			}
			index := int32(binary.NativeEndian.Uint32(m.Data[4:8]))
			named := linkName(m.Data[unix.SizeofIfInfomsg:]) == w.name
			switch {
			case named && m.Header.Type == unix.RTM_DELLINK:
				w.index, told = 0, true
			case named:
				told = told || w.index != index
				w.index = index
			case index == w.index:
				// Renamed away.
				w.index, told = 0, true
			}
		case unix.RTM_NEWADDR, unix.RTM_DELADDR:
			// ifaddrmsg: family, prefix length, flags, scope, index (4).
			if len(m.Data) < unix.SizeofIfAddrmsg {
				continue
			}
			index := int32(binary.NativeEndian.Uint32(m.Data[4:8]))
			told = told || (w.index != 0 && index == w.index)
		}
	}
	return told
}

// linkName is the IFLA_IFNAME attribute of a link message's attributes.
func linkName(attrs []byte) string {
	ad, err := netlink.NewAttributeDecoder(attrs)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.IFLA_IFNAME {
			return string(bytes.TrimRight(ad.Bytes(), "\x00"))
		}
	}
	return ""
}
