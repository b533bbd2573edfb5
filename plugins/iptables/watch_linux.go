//go:build linux

package iptables

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

var _ dataplane.KernelWatcher = Loader{}

// legacyPoll is how often the legacy tables are asked whether they
// changed: a change is seen within a quarter of a second, which with the
// agent's debounce is half a second, at 0.1 ms a poll on a node of
// 10,000 Services (BenchmarkLegacyPoll10k).
const legacyPoll = 250 * time.Millisecond

// WatchKernel calls changed soon after each change of the legacy
// backend's tables in the calling thread's network namespace. The
// nf_tables backend's changes are the nftables plane's to notice (the
// kernel notifies them); the legacy backend notifies nothing, so every
// legacyPoll it asks every table's size and entry count (IPT_SO_GET_INFO:
// a few dozen bytes a table, nothing of the entries). A change that leaves
// a table's size, entry count and hook offsets as they were (one rule
// replaced by another of the same length) is not seen here, only by the
// next full read.
func (Loader) WatchKernel(ctx context.Context, changed func()) error {
	last, err := legacyFingerprint()
	if err != nil {
		return err
	}
	tick := time.NewTicker(legacyPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := legacyFingerprint()
		if err != nil {
			return err
		}
		if !slices.Equal(cur, last) {
			changed()
			last = cur
		}
	}
}

// legacyFingerprint is what the kernel tells of every legacy table of
// both families without handing over entries: the tables' names and each
// one's GET_INFO answer (hooks, underflows, entry count, size).
func legacyFingerprint() ([]byte, error) {
	var out []byte
	for _, fam := range []xtables.Family{xtables.IPv4, xtables.IPv6} {
		k, err := xtables.Open(fam)
		if err != nil {
			return nil, fmt.Errorf("iptables: watching the legacy tables: %w", err)
		}
		names, err := k.Tables()
		if err != nil {
			k.Close()
			if errors.Is(err, fs.ErrNotExist) {
				continue // no legacy tables of the family (yet)
			}
			return nil, fmt.Errorf("iptables: watching the legacy tables: %w", err)
		}
		for _, name := range names {
			ib := make([]byte, xtables.InfoSize)
			copy(ib, name)
			if err := k.Get(xtables.GetInfo, ib); err != nil {
				// A table that went between the listing and the
				// question: the next poll sees its absence.
				ib = append(ib[:len(name)], 0)
			}
			out = append(append(out, byte(fam)), ib...)
		}
		k.Close()
	}
	return out, nil
}
