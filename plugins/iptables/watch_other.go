//go:build !linux

package iptables

import (
	"context"
	"errors"
)

// WatchKernel needs Linux.
func (Loader) WatchKernel(context.Context, func()) error {
	return errors.New("iptables: watching the legacy tables needs Linux")
}
