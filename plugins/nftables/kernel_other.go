//go:build !linux

package nftables

import "errors"

// ReadNetlink needs Linux.
func ReadNetlink(int) (*Ruleset, error) {
	return nil, errors.New("nftables: reading the ruleset over netlink needs Linux")
}

// ElementCache needs Linux, as ReadNetlink does.
type ElementCache struct{}

// NewElementCache returns an empty cache.
func NewElementCache() *ElementCache { return &ElementCache{} }

// Reused is 0: nothing is read.
func (*ElementCache) Reused() int { return 0 }

// ReadNetlinkCached needs Linux.
func ReadNetlinkCached(netns int, _ *ElementCache) (*Ruleset, error) { return ReadNetlink(netns) }
