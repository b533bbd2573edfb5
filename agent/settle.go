package agent

import (
	"strings"
	"time"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/model"
)

// kube-proxy applies an API change only at its next sync, seconds or
// minutes later on a large node: until then the kernel differs from the
// API, and that difference is lag, not drift. A finding counts as drift
// only once it has outlived a sync of kube-proxy that started after the
// last change to its Service; where kube-proxy's metrics cannot be read,
// once it has lasted the grace period.

// syncTracker follows kube-proxy's syncs across reads of its metrics, to
// bound when its last sync started: kube-proxy publishes when a sync ended
// and a histogram of how long syncs took, not when one began.
type syncTracker struct {
	last   inspect.KubeProxySync
	lastAt time.Time
	have   bool
	// started is a time no later than the start of kube-proxy's last
	// sync, zero while no sync has been seen to end since the first read.
	started time.Time
}

// observe takes a read of kube-proxy's metrics made at at.
func (t *syncTracker) observe(s inspect.KubeProxySync, at time.Time) {
	if !t.have {
		t.last, t.lastAt, t.have = s, at, true
		return
	}
	switch {
	case s.Syncs < t.last.Syncs:
		// kube-proxy restarted after the last read: every sync of the
		// new one started after it.
		if s.Syncs > 0 {
			t.started = t.lastAt
		}
	case s.Syncs == t.last.Syncs+1:
		// One sync ended since the last read: its duration is what the
		// histogram's sum grew by.
		took := time.Duration((s.SyncSeconds - t.last.SyncSeconds) * float64(time.Second))
		t.started = later(t.started, s.LastSync.Add(-took))
	case s.Syncs > t.last.Syncs+1:
		// Several: the last started after the one before it ended,
		// which was after the last read.
		t.started = later(t.started, t.lastAt)
	}
	t.last, t.lastAt = s, at
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// settleRules are the times that decide when a difference is drift.
type settleRules struct {
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

// kubeProxyState is what the agent knows of kube-proxy's syncs at a check.
type kubeProxyState struct {
	readable bool
	sync     inspect.KubeProxySync
	// started bounds the start of its last sync (see syncTracker).
	started time.Time
	// readAt is when its metrics were read.
	readAt time.Time
}

// settled reports whether a finding is drift: its Service last changed at
// changed (zero: not since the agent started), it was first seen at
// firstSeen, and the kernel was read at now, after kube-proxy's metrics.
func (r settleRules) settled(kp kubeProxyState, changed, firstSeen, now time.Time) bool {
	if now.Sub(later(changed, firstSeen)) >= r.Grace {
		return true
	}
	if !kp.readable {
		return false
	}
	if !kp.started.IsZero() && (changed.IsZero() || (kp.started.After(changed.Add(r.Skew)) && kp.sync.LastSync.After(kp.started))) {
		// A sync that started after the change ended, successfully,
		// before the read. (The histogram counts failed syncs too: the
		// last success must be that sync's end, or a later one's.)
		return true
	}
	return changed.IsZero() && !kp.sync.Pending() && !kp.sync.LastSync.IsZero() &&
		now.Sub(kp.sync.LastSync) >= r.Quiet
}

// lag is how long kube-proxy has gone without a successful sync while a
// change waits (zero when none waits), and whether that is a stall.
func (r settleRules) lag(kp kubeProxyState, now time.Time) (time.Duration, bool) {
	if !kp.readable || !kp.sync.Pending() {
		return 0, false
	}
	since := kp.sync.LastSync
	if since.IsZero() {
		since = kp.sync.LastQueued
	}
	d := max(now.Sub(since), 0)
	return d, d >= r.StallAfter
}

// findingKey names a finding across checks.
func findingKey(f behavior.Finding) string {
	return strings.Join([]string{f.Type, f.Service, strings.Join(f.Frontends, ","), f.Expected, f.Observed}, "\x00")
}

// serviceOf is the namespace/name of a finding's Service ("" for none).
func serviceOf(f behavior.Finding) string {
	name := model.ParseServicePortName(f.Service).Service()
	return name
}
