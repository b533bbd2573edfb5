package survey

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/snapshot"
)

// LiveSettle is how long after a change of its objects a Service's
// differences count as pending, not drift, on a live cluster: kube-proxy
// syncs a change within about a second (its minSyncPeriod) on most nodes,
// and the node states are read again once this has passed.
const LiveSettle = 10 * time.Second

// burst is how long a change waits for the ones that come with it (a
// rollout writes a Service's EndpointSlices many times in a row).
const burst = 300 * time.Millisecond

// Live surveys a live cluster as its objects change: it keeps the last
// state read, watches Services and EndpointSlices, and answers each change
// with a survey of the new objects over the node states already read (the
// changed Services' differences pending) until the nodes are read again. A
// consumer (the TUI, a web page) gives it each read (Remember) and follows
// its changes (Follow). Its methods are safe for concurrent use.
type Live struct {
	family string
	mu     sync.Mutex
	w      *inspect.Watcher
	last   *snapshot.Snapshot
	unread []analysis.NodeFindings
	source string
	// changed has a value when the watch saw a change not yet surveyed.
	changed chan struct{}
}

// NewLive returns a Live surveying family.
func NewLive(family string) *Live {
	return &Live{family: family, changed: make(chan struct{}, 1)}
}

// Watch lists and watches the cluster's Services and EndpointSlices until
// ctx ends, giving up if they are not listed within a minute (a user who
// may list but not watch never gets a synced cache).
func (l *Live) Watch(ctx context.Context, cs kubernetes.Interface) error {
	w, err := inspect.NewWatcher(cs, "", func() {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	w.Run(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.WaitSynced(syncCtx); err != nil {
		return err
	}
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
	return nil
}

// Follow turns the watch's changes into new surveys, a burst of changes
// into one, until ctx ends: updated gets each, and reread is called once
// kube-proxy has had time to apply the last change, for the consumer to
// read the nodes again.
func (l *Live) Follow(ctx context.Context, updated func(*Survey), reread func()) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			reread()
		case <-l.changed:
			time.Sleep(burst)
			if sv := l.resurvey(); sv != nil {
				updated(sv)
			}
			timer.Reset(LiveSettle + time.Second)
		}
	}
}

// Remember takes a new read of the cluster (source says where from, unread
// the nodes it could not read) and surveys it, over the watch's newest
// objects when there is a watch.
func (l *Live) Remember(s *snapshot.Snapshot, source string, unread []analysis.NodeFindings) *Survey {
	l.mu.Lock()
	l.last, l.unread, l.source = s, unread, source
	l.mu.Unlock()
	return l.survey(s, source, unread)
}

// resurvey is the last read with the watch's objects in place of those
// listed then; nil before the first read.
func (l *Live) resurvey() *Survey {
	l.mu.Lock()
	last, unread, source := l.last, l.unread, l.source
	l.mu.Unlock()
	if last == nil {
		return nil
	}
	s := *last
	if last.Cluster != nil {
		c := *last.Cluster
		s.Cluster = &c
	}
	return l.survey(&s, source, unread)
}

// survey surveys s; with a watch, over its newest objects, and the
// differences of Services that changed since their node was read are
// pending.
func (l *Live) survey(s *snapshot.Snapshot, source string, unread []analysis.NodeFindings) *Survey {
	l.mu.Lock()
	w := l.w
	l.mu.Unlock()
	opts := Options{Family: l.family, Unread: unread, Settle: LiveSettle}
	if w != nil {
		if c, err := w.Cluster(); err == nil && s.Cluster != nil {
			s.Cluster.Services, s.Cluster.EndpointSlices = c.Services, c.EndpointSlices
		}
		opts.Changed = w.Changes().Services
	}
	return New(s, source, opts)
}
