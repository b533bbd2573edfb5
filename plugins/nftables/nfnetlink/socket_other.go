//go:build !linux

package nfnetlink

import "errors"

// NetNS dials the kernel's nf_tables in a network namespace: Linux only.
type NetNS int

// Dial fails: netlink needs Linux.
func (NetNS) Dial() (Transport, error) {
	return nil, errors.New("netlink needs Linux")
}

// Sockets is 1.
func (NetNS) Sockets() int { return 1 }
