// Package agent is the node agent: on its node it watches what kube-proxy
// watches, reads the kernel's state, and checks it for drift when the API
// objects change (debounced) and on a period, telling drift from
// kube-proxy's ordinary lag. The exporter serves what it finds.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/settle"
)

// Options configure an Agent.
type Options struct {
	// Node is the node the agent runs on.
	Node string
	// Family is the IP family checked ("IPv4", "IPv6").
	Family string
	// Interval is the period of full checks; Debounce how long the
	// objects must stay unchanged before a change is checked,
	// KernelDebounce how long the kernel's rules must (see WatchKernel),
	// and MinGap the least time between the start of two checks (never
	// less than twice the last check's time, so that checking takes at
	// most a third of the agent's time on a node whose rules churn).
	Interval, Debounce, KernelDebounce, MinGap time.Duration
	// WatchKernel: check the node soon after its kernel's rules change
	// (inspect.WatchKernel), as well as after the API objects do.
	WatchKernel bool
	// FullInterval bounds the time between two full reads of a node: in
	// between, a period when nothing changed confirms the last check (see
	// canConfirm).
	FullInterval time.Duration
	// KubeProxyMetrics is where kube-proxy serves /metrics and /configz
	// on the node (host:port).
	KubeProxyMetrics string
	// CheckTimeout is each check's deadline: a check that has not ended
	// by then is cancelled and counts as failed.
	CheckTimeout time.Duration
	// Grace, Quiet, StallAfter and Skew: see settle.Rules.
	Grace, Quiet, StallAfter, Skew time.Duration
	// Log receives the agent's log (nil: discarded).
	Log *slog.Logger
}

// DefaultOptions are the agent's defaults for a node.
func DefaultOptions(node string) Options {
	return Options{Node: node, Family: "IPv4", Interval: time.Minute, Debounce: 2 * time.Second,
		KernelDebounce: 250 * time.Millisecond, MinGap: time.Second, WatchKernel: true, FullInterval: 15 * time.Minute,
		CheckTimeout:     DefaultCheckTimeout,
		KubeProxyMetrics: inspect.DefaultKubeProxyMetricsAddress,
		Grace:            2 * time.Minute, Quiet: 5 * time.Second, StallAfter: 3 * time.Minute, Skew: time.Second}
}

// DefaultCheckTimeout is a check's deadline unless set: a 10,000-Service
// node's check takes seconds.
const DefaultCheckTimeout = 2 * time.Minute

// StaleAfter is how long the agent may go without finishing a check
// before it counts as stuck (/livez fails): three periods and one check's
// deadline, so that a check that ends late, or two that fail at once,
// are not taken for a hang.
func (o Options) StaleAfter() time.Duration { return 3*o.Interval + o.CheckTimeout }

// Agent checks one node. Status is safe to call from any goroutine.
type Agent struct {
	opts   Options
	cs     kubernetes.Interface
	w      *inspect.Watcher
	reader *inspect.RuleReader // every check's read of the kernel's rules
	pokes  chan struct{}
	// kernelPokes hear the kernel's rules change.
	kernelPokes chan struct{}
	status      atomic.Pointer[Status]
	// step is one check, given its deadline (checkOnce; tests replace it).
	step func(context.Context) *Check
	// fingerprint is the digest of the node's kernel state at a period
	// (inspect.KernelFingerprint; tests replace it). A check takes its
	// own with its read (inspect.Rules.Fingerprint).
	fingerprint func(context.Context) ([]byte, error)

	// pokedAt is when the objects or the kernel last changed (Unix
	// nanoseconds).
	pokedAt atomic.Int64

	// The loop's own state, used by one goroutine.
	// memo keeps each check's observation for the next, which walks
	// again only the Services whose rules changed (analysis.Memo).
	memo     *analysis.Memo
	tracker  settle.Tracker
	lastTook time.Duration
	// confirmTook is how long the digest of the last period's
	// confirmation took (its cost, which grows with the node); zero when
	// the last period checked the node.
	confirmTook  time.Duration
	firstSeen    map[string]time.Time
	apiDownSince time.Time
}

// New makes an agent; Run starts it.
func New(cs kubernetes.Interface, o Options) (*Agent, error) {
	if o.Node == "" {
		return nil, errors.New("the agent needs its node's name")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	a := &Agent{opts: o, cs: cs, reader: inspect.NewRuleReader(), pokes: make(chan struct{}, 1), kernelPokes: make(chan struct{}, 1), firstSeen: map[string]time.Time{}, memo: analysis.NewMemo()}
	a.step = a.checkOnce
	a.fingerprint = inspect.KernelFingerprint
	w, err := inspect.NewWatcher(cs, o.Node, a.poke)
	if err != nil {
		return nil, err
	}
	a.w = w
	a.status.Store(&Status{Node: o.Node, Started: time.Now(), StaleAfter: o.StaleAfter()})
	return a, nil
}

// Status is the agent's latest status.
func (a *Agent) Status() *Status {
	s := *a.status.Load()
	s.WatchErrors, s.LastWatchError = a.w.WatchErrors()
	return &s
}

func (a *Agent) poke() {
	a.pokedAt.Store(time.Now().UnixNano())
	nudge(a.pokes)
}

func (a *Agent) kernelPoke() {
	a.pokedAt.Store(time.Now().UnixNano())
	nudge(a.kernelPokes)
}

// nudge signals c without blocking: one signal waiting is enough.
func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run watches the API and checks the node until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.w.Start(ctx); err != nil {
		return err
	}
	a.publish(func(s *Status) { s.Synced, s.SyncedAt = true, time.Now() })
	a.opts.Log.Info("objects listed; first check", "node", a.opts.Node)
	if a.opts.WatchKernel {
		go inspect.WatchKernel(ctx, a.kernelPoke, func(mode string, err error) {
			a.opts.Log.Warn("kernel changes not watched: they are seen at the periodic checks", "node", a.opts.Node, "mode", mode, "err", err)
		})
	}
	var last time.Time
	for {
		last = time.Now()
		a.confirmTook = 0
		if s := a.status.Load(); !canConfirm(s.Last, s.Good, a.quiet(), last) || !a.confirm(ctx, s.Good) {
			a.check(ctx)
			a.lastTook = time.Since(last)
		}
		if err := a.wait(ctx, last); err != nil {
			return nil
		}
	}
}

// quiet is what the loop knows of the changes since its last check.
func (a *Agent) quiet() quiet {
	q := quiet{fullInterval: a.opts.FullInterval}
	if n := a.pokedAt.Load(); n != 0 {
		q.pokedAt = time.Unix(0, n)
	}
	return q
}

// wait returns when the next check is due: Interval after the last one
// started (Quiet when it left differences pending, longer after a costly
// confirmation: see periodAfter), or once the objects have been quiet for
// Debounce after a change (the kernel's rules for KernelDebounce), but
// never sooner than the gap after the last (MinGap, or twice the last
// check's time).
func (a *Agent) wait(ctx context.Context, last time.Time) error {
	interval := periodAfter(a.opts.Interval, a.confirmTook)
	if g := a.status.Load().Good; g != nil && len(g.Pending) > 0 {
		// Differences not yet drift: look again once kube-proxy has had
		// time to sync, not a whole period later.
		interval = min(interval, max(a.opts.Quiet, a.opts.MinGap, time.Second))
	}
	period := time.NewTimer(time.Until(last.Add(interval)))
	defer period.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-period.C:
			return nil
		case <-a.pokes:
			// Each change restarts the quiet time.
			debounce = time.After(a.opts.Debounce)
		case <-a.kernelPokes:
			// The kernel changed (kube-proxy's sync, or an edit):
			// check once its writes have stopped.
			debounce = time.After(a.opts.KernelDebounce)
		case <-debounce:
			if d := time.Until(last.Add(max(a.opts.MinGap, 2*a.lastTook))); d > 0 {
				debounce = time.After(d)
				continue
			}
			return nil
		}
	}
}

// publish changes a copy of the status and publishes it.
func (a *Agent) publish(change func(*Status)) {
	s := *a.status.Load()
	change(&s)
	a.status.Store(&s)
}

// check checks the node once, within CheckTimeout, and publishes the
// result.
func (a *Agent) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, a.opts.CheckTimeout)
	c := a.step(cctx)
	cancel()
	if c.Err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		c.Err = fmt.Errorf("the check did not end within --check-timeout %v: %w", a.opts.CheckTimeout, c.Err)
	}
	if c.Err != nil {
		a.opts.Log.Error("check failed", "node", a.opts.Node, "err", c.Err)
	} else {
		a.opts.Log.Info("checked", "node", a.opts.Node, "frontends", c.Frontends, "drift", len(c.Drift),
			"pending", len(c.Pending), "walked", c.Walked.Walked, "reused", c.Walked.Reused, "took", c.Duration.Round(time.Millisecond))
	}
	a.publish(func(s *Status) {
		s.Last = c
		s.Checks++
		if c.Err != nil {
			s.Failed++
			return
		}
		s.Good = c
	})
	// What a check read and built is garbage once it is published: give
	// it back to the node now, not when the next check's heap outgrows
	// the last one's (a 10,000-Service node's check peaks at a few hundred
	// megabytes; between checks the agent holds the objects it watches).
	debug.FreeOSMemory()
}

// errCheck wraps a check's failure with its step.
func errCheck(step string, err error) error { return fmt.Errorf("%s: %w", step, err) }
