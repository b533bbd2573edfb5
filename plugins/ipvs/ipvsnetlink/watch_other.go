//go:build !linux

package ipvsnetlink

import (
	"context"
	"errors"
)

// WatchLink needs Linux.
func WatchLink(context.Context, string, func()) error {
	return errors.New("ipvs: watching kube-ipvs0's addresses needs Linux")
}
