//go:build !linux

package ipvs

import (
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// readIPSets needs Linux: elsewhere there are no ipsets to read.
func readIPSets() (snapshot.Dump, error) {
	return snapshot.Dump{Collector: snapshot.CollectorIPSet}, fmt.Errorf("ipsets are read on Linux only: %w", dataplane.ErrNotInKernel)
}
