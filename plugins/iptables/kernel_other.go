//go:build !linux

package iptables

import "errors"

// ErrNoLegacy is the error of a legacy read where the kernel has no legacy
// tables in use.
var ErrNoLegacy = errors.New("the legacy backend is not in use in this kernel")

// ReadLegacy needs Linux.
func ReadLegacy(string) (string, error) {
	return "", errors.New("iptables: reading the legacy tables needs Linux")
}

// readLegacyDigest needs Linux.
func readLegacyDigest(string) (string, []byte, error) {
	return "", nil, errors.New("iptables: reading the legacy tables needs Linux")
}
