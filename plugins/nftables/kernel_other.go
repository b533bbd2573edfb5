//go:build !linux

package nftables

import "errors"

// ReadNetlink needs Linux.
func ReadNetlink(int) (*Ruleset, error) {
	return nil, errors.New("nftables: reading the ruleset over netlink needs Linux")
}
