//go:build linux

package nfnetlinktest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func errnoNameOf(e syscall.Errno) string { return unix.ErrnoName(e) }

// errnoOf is the errno of a name, 0 if none: Linux's errnos are below 256.
func errnoOf(name string) syscall.Errno {
	for e := syscall.Errno(1); e < 256; e++ {
		if unix.ErrnoName(e) == name {
			return e
		}
	}
	return 0
}
