//go:build !linux

package nfnetlink

import (
	"context"
	"errors"
)

// Watch needs Linux.
func Watch(ctx context.Context, netns int, changed func()) error {
	return errors.New("nf_tables notifications: not on this system")
}
