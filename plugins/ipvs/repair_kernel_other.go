//go:build !linux

package ipvs

import (
	"context"
	"errors"
)

// applyDelta: IPVS, ipsets and kube-ipvs0 are Linux's.
func applyDelta(context.Context, *delta, string, string) error {
	return errors.New("ipvs mode's state is written on a Linux node only")
}
