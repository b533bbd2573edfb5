//go:build !linux

package iptables

import (
	"context"
	"errors"
)

// KernelFingerprint needs Linux.
func (Loader) KernelFingerprint(context.Context) ([]byte, error) {
	return nil, errors.New("iptables: fingerprinting the legacy tables needs Linux")
}
