// Package reconcile repairs a node's kernel state from svctrace's analysis:
// today its conntrack table (the entries that keep clients on backends that
// are gone). It writes to the kernel only through small interfaces, so that
// unit tests drive it with fakes while the lab drives the real kernel.
package reconcile

import (
	"context"
	"fmt"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/conntrack"
)

// ConntrackTable is the kernel's connection tracking table as a repair
// uses it: read (filtered, streaming) and delete one entry.
type ConntrackTable interface {
	// Dump calls fn for every entry that passes the filter.
	Dump(ctx context.Context, f conntrack.Filter, fn func(conntrack.Entry) error) error
	// Delete removes an entry; deleted is false when it was already gone.
	Delete(ctx context.Context, e conntrack.Entry) (deleted bool, err error)
}

// KernelConntrack is the conntrack table of the network namespace the
// process runs in, over netlink.
type KernelConntrack struct{}

// Dump reads the table over netlink.
func (KernelConntrack) Dump(ctx context.Context, f conntrack.Filter, fn func(conntrack.Entry) error) error {
	_, err := conntrack.Dump(ctx, f, fn)
	return err
}

// Delete deletes one entry over netlink.
func (KernelConntrack) Delete(ctx context.Context, e conntrack.Entry) (bool, error) {
	return conntrack.Delete(ctx, e)
}

// ConntrackRepair is what reconcile conntrack did or would do.
type ConntrackRepair struct {
	// Stale are the entries to delete, with why.
	Stale []analysis.Flow
	// Deleted counts entries deleted (with --apply); Gone those already
	// gone when their turn came.
	Deleted, Gone int
	// Remaining are stale entries found when the table was read again.
	Remaining []analysis.Flow
}

// RepairConntrack deletes the stale entries among flows from the table, and
// nothing else, then reads the table again (only the node's frontends) and
// reports what is still stale.
func RepairConntrack(ctx context.Context, table ConntrackTable, a *analysis.NodeAnalysis, flows []analysis.Flow) (*ConntrackRepair, error) {
	r := &ConntrackRepair{Stale: StaleFlows(flows)}
	for _, f := range r.Stale {
		deleted, err := table.Delete(ctx, f.Entry)
		if err != nil {
			return r, fmt.Errorf("deleting conntrack entry %s: %w", f.Text, err)
		}
		if deleted {
			r.Deleted++
		} else {
			r.Gone++
		}
	}
	entries, err := ReadConntrack(ctx, table, a)
	if err != nil {
		return r, fmt.Errorf("reading conntrack again: %w", err)
	}
	r.Remaining = StaleFlows(a.CorrelateConntrack(entries))
	return r, nil
}

// ReadConntrack reads the entries of the table whose original destination
// is one of the node's Service frontends (or the node itself, for
// NodePorts), streaming and filtered.
func ReadConntrack(ctx context.Context, table ConntrackTable, a *analysis.NodeAnalysis) ([]conntrack.Entry, error) {
	var out []conntrack.Entry
	err := table.Dump(ctx, conntrack.Filter{Family: a.Family, OrigDst: a.FrontendAddrs()}, func(e conntrack.Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}
