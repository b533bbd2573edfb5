package agent

import (
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
)

// Status is what the agent knows at one moment: the exporter and the
// health endpoints read it. A Status is never changed once published.
type Status struct {
	Node string
	// Started is when the agent started.
	Started time.Time
	// Synced says the informers have listed every object once, and
	// SyncedAt when they did.
	Synced   bool
	SyncedAt time.Time
	// StaleAfter is how long the agent may go without finishing a check
	// before it counts as stuck (0: never).
	StaleAfter time.Duration
	// Last is the last check made, Good the last that succeeded (nil
	// before the first).
	Last, Good *Check
	// Checks counts the checks made, and Failed those that failed.
	Checks, Failed uint64
	// WatchErrors counts the errors of the API watches, LastWatchError is
	// when the last happened: while the API server cannot be reached,
	// the agent goes on checking the kernel against the objects it has.
	WatchErrors    uint64
	LastWatchError time.Time
}

// Ready reports whether the agent's answers can be used: the informers
// have synced and a check has succeeded.
func (s *Status) Ready() bool { return s != nil && s.Synced && s.Good != nil }

// Progress is when the agent last finished a check, whether it succeeded
// or failed; before its first, when it listed the objects (zero: not yet).
func (s *Status) Progress() time.Time {
	if s.Last != nil {
		return s.Last.At.Add(s.Last.Duration)
	}
	return s.SyncedAt
}

// Stale says how long the agent has gone without finishing a check at
// now, and whether that is longer than StaleAfter: its loop is stuck. An
// agent that waits for its first list of the objects is not stale: it
// waits for the API server, which a restart does not bring back.
func (s *Status) Stale(now time.Time) (time.Duration, bool) {
	p := s.Progress()
	if p.IsZero() || s.StaleAfter <= 0 {
		return 0, false
	}
	d := now.Sub(p)
	return d, d > s.StaleAfter
}

// Check is one check of the node: kube-proxy's state, the kernel read and
// the drift found.
type Check struct {
	At       time.Time
	Duration time.Duration
	// ReadAt, when set, says this check read nothing of the kernel: it
	// confirmed the findings of the node's read that started then, as
	// nothing had changed since (see canConfirm).
	ReadAt time.Time
	// Fingerprint is the digest of the kernel's state the read found
	// (inspect.Rules.Fingerprint; nil: none could be taken).
	Fingerprint []byte
	// Err is why the check failed (nil: it succeeded).
	Err error
	// Reads are the parts of the kernel's state read, each with its
	// duration and error.
	Reads []inspect.Read
	// KubeProxy is what kube-proxy told of itself.
	KubeProxy KubeProxy
	// Frontends is how many frontends were checked.
	Frontends int
	// Walked says how many groups of frontends (a Service's each) the
	// check walked, and how many it took from the last check's walks, as
	// nothing they read had changed (analysis.Memo).
	Walked Walked
	// Drift are the findings that outlived kube-proxy's sync of the
	// changes before them; Pending the ones that wait for it.
	Drift, Pending []behavior.Finding
	// Notes are the analysis's notes.
	Notes []string
	// Behaviour is the digest of the node's behaviour, which the CLI
	// compares with the other nodes'.
	Behaviour []analysis.FrontendDigest
	// ServiceFrontends counts each Service port's frontends.
	ServiceFrontends map[string]int
	// APIErr is why the API server could not be reached at the check,
	// and APIDownSince since when: the objects checked against are then
	// those the watches last had.
	APIErr       error
	APIDownSince time.Time
}

// Walked counts a check's groups of frontends.
type Walked struct {
	Reused, Walked int
}

// KubeProxy is what the agent learnt of the node's kube-proxy.
type KubeProxy struct {
	// Mode and Version are its proxy mode and version, Backend the
	// iptables backend its rules are on (iptables mode), when known.
	Mode, Version, Backend string
	// MetricsErr is why its metrics could not be read (nil: they were).
	MetricsErr error
	// MetricsDuration is how long reading them took.
	MetricsDuration time.Duration
	// LastSync is when its last successful sync ended (zero: unknown).
	LastSync time.Time
	// Lag is how long it has gone without a successful sync while a
	// change waits; Stalled says that is longer than allowed.
	Lag     time.Duration
	Stalled bool
	// Waiting says it had a change queued that no sync had applied yet.
	Waiting bool
	// Absent says it does not answer on a node where its DaemonSet
	// (named by DaemonSet) runs it.
	Absent    bool
	DaemonSet string
}
