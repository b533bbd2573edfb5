// Package settle tells kube-proxy's lag from drift: kube-proxy applies an
// API change only at its next sync, so a difference between the kernel and
// the API is drift only once a sync that started after the change has
// ended, or, where kube-proxy's metrics cannot be read, once it has lasted
// a grace period. The node agent and the TUI's survey decide it by these
// rules alone.
package settle

import (
	"time"

	"github.com/svctrace/svctrace/inspect"
)

// Tracker follows kube-proxy's syncs across reads of its metrics, to
// bound when its last sync started: kube-proxy publishes when a sync ended
// and a histogram of how long syncs took, not when one began.
type Tracker struct {
	last   inspect.KubeProxySync
	lastAt time.Time
	have   bool
	// Started is a time no later than the start of kube-proxy's last
	// sync, zero while no sync has been seen to end since the first read.
	Started time.Time
}

// Observe takes a read of kube-proxy's metrics made at at.
func (t *Tracker) Observe(s inspect.KubeProxySync, at time.Time) {
	if !t.have {
		t.last, t.lastAt, t.have = s, at, true
		return
	}
	switch {
	case s.Syncs < t.last.Syncs:
		// kube-proxy restarted after the last read: every sync of the
		// new one started after it.
		if s.Syncs > 0 {
			t.Started = t.lastAt
		}
	case s.Syncs == t.last.Syncs+1:
		// One sync ended since the last read: its duration is what the
		// histogram's sum grew by.
		took := time.Duration((s.SyncSeconds - t.last.SyncSeconds) * float64(time.Second))
		t.Started = later(t.Started, s.LastSync.Add(-took))
	case s.Syncs > t.last.Syncs+1:
		// Several: the last started after the one before it ended,
		// which was after the last read.
		t.Started = later(t.Started, t.lastAt)
	}
	t.last, t.lastAt = s, at
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Rules are the times that decide when a difference is drift.
type Rules struct {
	// Grace is how long a difference may last before it is drift
	// whatever kube-proxy's metrics say (and when they cannot be read).
	Grace time.Duration
	// Quiet is how long kube-proxy must have had nothing pending and
	// made no sync for its state to be taken as final, when no sync has
	// been seen to start since the agent started: a change queued while
	// a sync runs is applied by a further sync, within its
	// min-sync-period.
	Quiet time.Duration
	// StallAfter is how long kube-proxy may go without a successful sync
	// while a change waits before it is reported as stalled.
	StallAfter time.Duration
	// Skew is how much later than the agent kube-proxy may learn of a
	// change (both watch the API server): a sync counts for a change
	// only if it started this long after it.
	Skew time.Duration
}

// KubeProxy is what is known of kube-proxy's syncs at a check (the zero
// value: nothing, its metrics not read).
type KubeProxy struct {
	Readable bool
	Sync     inspect.KubeProxySync
	// Started bounds the start of its last sync (see Tracker).
	Started time.Time
	// ReadAt is when its metrics were read.
	ReadAt time.Time
}

// Settled reports whether a finding is drift: its Service last changed at
// changed (zero: not since the caller began watching), it was first seen at
// firstSeen, and the kernel was read at now, after kube-proxy's metrics.
func (r Rules) Settled(kp KubeProxy, changed, firstSeen, now time.Time) bool {
	if now.Sub(later(changed, firstSeen)) >= r.Grace {
		return true
	}
	if !kp.Readable {
		return false
	}
	if !kp.Started.IsZero() && (changed.IsZero() || (kp.Started.After(changed.Add(r.Skew)) && kp.Sync.LastSync.After(kp.Started))) {
		// A sync that started after the change ended, successfully,
		// before the read. (The histogram counts failed syncs too: the
		// last success must be that sync's end, or a later one's.)
		return true
	}
	// kube-proxy queued a sync when it learnt of the change (or of a
	// later one): the queue's time is no earlier than the change's, give
	// or take the two watches' skew.
	queued := changed.IsZero() || !kp.Sync.LastQueued.IsZero() && !kp.Sync.LastQueued.Before(changed.Add(-r.Skew))
	if !queued {
		return false // kube-proxy has not seen the change yet
	}
	if q := kp.Sync.LastQueued; !changed.IsZero() && kp.Started.After(q) && kp.Sync.LastSync.After(kp.Started) {
		// A sync that started after that queue ended, successfully.
		return true
	}
	// Nothing waits and no sync has ended for Quiet: a change queued
	// while the last sync ran would have had its own sync by now.
	return !kp.Sync.Pending() && !kp.Sync.LastSync.IsZero() && now.Sub(kp.Sync.LastSync) >= r.Quiet
}

// Waiting reports whether kube-proxy has a change queued that no sync
// has applied yet: a difference not yet drift is then kube-proxy's lag.
// Otherwise it is a difference svctrace has not yet confirmed (kube-proxy
// synced a moment ago, or has not learnt of the change).
func (kp KubeProxy) Waiting() bool { return kp.Readable && kp.Sync.Pending() }

// Lag is how long kube-proxy has gone without a successful sync while a
// change waits (zero when none waits), and whether that is a stall.
func (r Rules) Lag(kp KubeProxy, now time.Time) (time.Duration, bool) {
	if !kp.Readable || !kp.Sync.Pending() {
		return 0, false
	}
	since := kp.Sync.LastSync
	if since.IsZero() {
		since = kp.Sync.LastQueued
	}
	d := max(now.Sub(since), 0)
	return d, d >= r.StallAfter
}
