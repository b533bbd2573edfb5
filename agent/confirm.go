package agent

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// A periodic check of a node where nothing has changed reads the kernel and
// walks every Service again only to find what the last check found: on a
// 10,000-Service node that is seconds of CPU each period, the most of what
// an idle agent costs. Where the kernel tells every change of the rules the
// check reads (nf_tables notifications: nftables mode, and iptables mode on
// the nf_tables backend), and nothing changed since the last check (no
// notification, no change of the objects, kube-proxy made no sync and
// answers, the API server answers), the period confirms the last check
// instead: it publishes its findings again as of now. A node is still read
// in full at least every FullInterval. The legacy tables notify nothing and
// their polled sizes miss one rule replaced by another of the same length,
// so on the legacy backend every period reads them in full.

// watchSettle is how long after the kernel watch starts a check must begin
// for its read to be covered by the watch (the watch joins its
// notifications' group a moment after it starts).
const watchSettle = time.Second

// quiet is what the agent's loop knows, at a period, of the changes since
// its last check.
type quiet struct {
	// watching says the kernel watch runs (it started and has not
	// failed), since watchSince.
	watching   bool
	watchSince time.Time
	// pokedAt is when the objects or the kernel last changed (zero: never
	// since the agent started).
	pokedAt time.Time
	// fullInterval bounds the time between two full reads.
	fullInterval time.Duration
}

// canConfirm says whether the period due at now may confirm good, the last
// good check, rather than read the node again: last is the last check.
func canConfirm(last, good *Check, q quiet, now time.Time) bool {
	switch {
	case good == nil || last != good || !q.watching:
		return false
	case len(good.Drift) > 0 || len(good.Pending) > 0 || good.APIErr != nil || good.KubeProxy.MetricsErr != nil:
		// What was found may go (a conntrack entry times out), and a
		// pending difference is to be looked at again.
		return false
	case !notified(good.KubeProxy.Mode, good.KubeProxy.Backend):
		return false
	}
	full := good.fullAt()
	return full.Sub(q.watchSince) >= watchSettle && q.pokedAt.Before(good.At) && now.Sub(full) < q.fullInterval
}

// notified says whether the kernel notifies every change of a mode's rules.
func notified(mode, backend string) bool {
	return mode == "nftables" || mode == "iptables" && backend == "nf_tables"
}

// fullAt is when the kernel was last read for c's findings.
func (c *Check) fullAt() time.Time {
	if !c.Confirms.IsZero() {
		return c.Confirms
	}
	return c.At
}

// confirm publishes good again as of now when kube-proxy and the API server
// tell nothing new; false (nothing published) when they do, or cannot be
// read: the node is then checked in full.
func (a *Agent) confirm(ctx context.Context, good *Check) bool {
	c := &Check{At: time.Now()}
	a.readKubeProxy(ctx, c)
	a.probeAPI(ctx, c)
	if c.KubeProxy.MetricsErr != nil || c.APIErr != nil || c.KubeProxy.Waiting || !c.KubeProxy.LastSync.Equal(good.KubeProxy.LastSync) {
		return false
	}
	n := *good
	n.At, n.Confirms = c.At, good.fullAt()
	n.KubeProxy.MetricsDuration, n.KubeProxy.Lag, n.KubeProxy.Stalled = c.KubeProxy.MetricsDuration, c.KubeProxy.Lag, c.KubeProxy.Stalled
	notes := good.Notes
	if !good.Confirms.IsZero() {
		notes = notes[:len(notes)-1] // the confirmation's note, replaced
	}
	n.Notes = append(slices.Clone(notes), fmt.Sprintf(
		"nothing changed since the node was read at %s (the kernel notifies every change of its nf_tables rules; no object changed; kube-proxy made no sync): that read's findings stand",
		n.Confirms.UTC().Format(time.RFC3339)))
	n.Duration = time.Since(c.At)
	a.publish(func(s *Status) {
		s.Last, s.Good = &n, &n
		s.Checks++
	})
	a.opts.Log.Debug("confirmed", "node", a.opts.Node, "read", n.Confirms, "took", n.Duration.Round(time.Millisecond))
	return true
}
