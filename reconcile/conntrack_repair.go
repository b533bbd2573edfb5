package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/plugins/conntrack"
	"github.com/svctrace/svctrace/snapshot"
)

// conntrackEntries parses the conntrack dumps of a node's snapshot.
func conntrackEntries(ns *snapshot.NodeState, family string) ([]conntrack.Entry, bool, error) {
	var out []conntrack.Entry
	found := false
	for _, d := range ns.Dumps {
		if d.Collector != snapshot.CollectorConntrack {
			continue
		}
		found = true
		origin := d.Origin
		if origin == "" {
			origin = fmt.Sprintf("node %s conntrack dump", ns.Name)
		}
		entries, _, err := conntrack.ParseText(origin, strings.NewReader(d.Text), 0)
		if err != nil {
			return nil, true, err
		}
		for _, e := range entries {
			if e.Family == "" || e.Family == family {
				out = append(out, e)
			}
		}
	}
	return out, found, nil
}

// ConntrackRepair is what reconcile conntrack did or would do.
type ConntrackRepair struct {
	// Stale are the entries to delete, with why.
	Stale []Flow
	// Deleted counts entries deleted (with --apply); Gone those already
	// gone when their turn came.
	Deleted, Gone int
	// Remaining are stale entries found when the table was read again.
	Remaining []Flow
}

// RepairConntrack deletes the stale entries among flows from the conntrack
// table of the network namespace the process runs in, and nothing else,
// then reads the table again (only the Services' frontends) and reports
// what is still stale.
func (a *NodeAnalysis) RepairConntrack(ctx context.Context, flows []Flow) (*ConntrackRepair, error) {
	r := &ConntrackRepair{}
	for _, f := range flows {
		if f.Status == FlowStale {
			r.Stale = append(r.Stale, f)
		}
	}
	for _, f := range r.Stale {
		deleted, err := conntrack.Delete(ctx, f.Entry)
		if err != nil {
			return r, fmt.Errorf("deleting conntrack entry %s: %w", f.Text, err)
		}
		if deleted {
			r.Deleted++
		} else {
			r.Gone++
		}
	}
	entries, err := a.ReadConntrack(ctx)
	if err != nil {
		return r, fmt.Errorf("reading conntrack again: %w", err)
	}
	for _, f := range a.CorrelateConntrack(entries) {
		if f.Status == FlowStale {
			r.Remaining = append(r.Remaining, f)
		}
	}
	return r, nil
}

// ReadConntrack reads the conntrack entries of the network namespace the
// process runs in whose original destination is one of the node's Service
// frontends (or the node itself, for NodePorts), streaming and filtered.
func (a *NodeAnalysis) ReadConntrack(ctx context.Context) ([]conntrack.Entry, error) {
	var out []conntrack.Entry
	_, err := conntrack.Dump(ctx, conntrack.Filter{Family: a.Family, OrigDst: a.frontendAddrs()}, func(e conntrack.Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// frontendAddrs are the destination addresses of the node's frontends.
func (a *NodeAnalysis) frontendAddrs() []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(x netip.Addr) {
		if x.IsValid() && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, f := range a.Expected.Frontends {
		if ip, err := netip.ParseAddr(f.Key.IP); err == nil {
			add(ip)
		}
	}
	for _, ip := range a.NodeIPs {
		add(ip)
	}
	return out
}
