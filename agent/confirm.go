package agent

import (
	"bytes"
	"context"
	"time"
)

// A periodic check of a node where nothing has changed reads the kernel and
// walks every Service again only to find what the last check found: on a
// 10,000-Service node that is seconds of CPU each period, the most of what
// an idle agent costs. Each full check takes, with its read, a digest of
// the kernel state the planes read (inspect.KernelFingerprint, which the
// read gives as inspect.Rules.Fingerprint: the nf_tables generation, the
// legacy tables' entries without their counters, an IPVS table's servers,
// the ipsets and kube-ipvs0's addresses without their counters). At a
// period when nothing was found, no object changed and the kernel told of
// no change, the digest is taken again: when it is the same and kube-proxy
// made no sync and answers, as does the API server, the period confirms
// the last check (publishes its findings again as of now) instead of
// reading the node. A node is still read in full at least every
// FullInterval. A node whose state has no digest (a plane's digest fails)
// is read in full every period.

// quiet is what the agent's loop knows, at a period, of the changes since
// its last check.
type quiet struct {
	// pokedAt is when the objects or the kernel last changed (zero: never
	// since the agent started).
	pokedAt time.Time
	// fullInterval bounds the time between two full reads.
	fullInterval time.Duration
}

// canConfirm says whether the period due at now may try to confirm good,
// the last good check, rather than read the node again: last is the last
// check.
func canConfirm(last, good *Check, q quiet, now time.Time) bool {
	switch {
	case good == nil || last != good || good.Fingerprint == nil:
		return false
	case len(good.Drift) > 0 || len(good.Pending) > 0 || good.APIErr != nil || good.KubeProxy.MetricsErr != nil:
		// What was found may go (a conntrack entry times out), and a
		// pending difference is to be looked at again.
		return false
	}
	full := good.fullAt()
	return q.pokedAt.Before(good.At) && now.Sub(full) < q.fullInterval
}

// fullAt is when the kernel was last read for c's findings.
func (c *Check) fullAt() time.Time {
	if !c.ReadAt.IsZero() {
		return c.ReadAt
	}
	return c.At
}

// confirm publishes good again as of now when the kernel's digest is the
// one its read was taken at and kube-proxy and the API server tell nothing
// new; false (nothing published) when any differs, or cannot be read: the
// node is then checked in full.
func (a *Agent) confirm(ctx context.Context, good *Check) bool {
	c := &Check{At: time.Now()}
	fp, err := a.fingerprint(ctx)
	digest := time.Since(c.At)
	if err != nil || !bytes.Equal(fp, good.Fingerprint) {
		return false
	}
	a.readKubeProxy(ctx, c)
	a.probeAPI(ctx, c)
	if c.KubeProxy.MetricsErr != nil || c.APIErr != nil || c.KubeProxy.Waiting || !c.KubeProxy.LastSync.Equal(good.KubeProxy.LastSync) {
		return false
	}
	n := *good
	n.At, n.ReadAt = c.At, good.fullAt()
	n.KubeProxy.MetricsDuration, n.KubeProxy.Lag, n.KubeProxy.Stalled = c.KubeProxy.MetricsDuration, c.KubeProxy.Lag, c.KubeProxy.Stalled
	n.Duration = time.Since(c.At)
	a.publish(func(s *Status) {
		s.Last, s.Good = &n, &n
		s.Checks++
	})
	a.confirmTook = digest
	a.opts.Log.Debug("confirmed", "node", a.opts.Node, "read", n.ReadAt, "took", n.Duration.Round(time.Millisecond))
	return true
}

// confirmShare is the share of one core an idle agent spends at most on
// its confirmations, while Interval allows: a confirmation on the legacy
// backend copies every entry of its tables out of the kernel for its
// digest, half a second at 10,000 Services, which every minute would be
// nearly 1% of a core by itself.
const confirmShare = 0.005

// periodAfter is the time from a period's start to the next: interval,
// or, after a confirmation whose digest took took (a kernel's copy, whose
// time is its CPU; not the round trips to kube-proxy and the API server),
// long enough for confirmations to cost at most confirmShare of a core, up
// to twice interval (which the agent's StaleAfter allows for). Changes to
// the objects or the kernel do not wait for it: they start a check after
// their debounce.
func periodAfter(interval, took time.Duration) time.Duration {
	if took <= 0 {
		return interval
	}
	return min(2*interval, max(interval, time.Duration(float64(took)/confirmShare)))
}
