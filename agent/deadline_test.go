package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestCheckDeadline: a check that would never end is cancelled at
// CheckTimeout and published as a failed check naming the deadline, so
// the loop goes on.
func TestCheckDeadline(t *testing.T) {
	o := DefaultOptions("node1")
	o.CheckTimeout = 20 * time.Millisecond
	a, err := New(fake.NewClientset(), o)
	if err != nil {
		t.Fatal(err)
	}
	a.step = func(ctx context.Context) *Check {
		c := &Check{At: time.Now()}
		<-ctx.Done() // a read that hangs until it is cancelled
		c.Err = errCheck("reading the kernel's state", ctx.Err())
		return a.finish(c)
	}
	done := make(chan struct{})
	go func() {
		a.check(t.Context())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a check that hangs is not stopped by its deadline")
	}
	s := a.Status()
	if s.Checks != 1 || s.Failed != 1 || s.Last == nil || s.Good != nil {
		t.Fatalf("status after a check past its deadline: %+v", s)
	}
	if msg := s.Last.Err.Error(); !strings.Contains(msg, "--check-timeout 20ms") || !strings.Contains(msg, "reading the kernel's state") {
		t.Errorf("the check's error %q does not name its deadline and step", msg)
	}
}

// TestDefaultCheckTimeout: an agent always has a deadline, and the bound
// of /livez counts it.
func TestDefaultCheckTimeout(t *testing.T) {
	a, err := New(fake.NewClientset(), Options{Node: "node1", Interval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if a.opts.CheckTimeout != DefaultCheckTimeout {
		t.Errorf("CheckTimeout %v without one set, want %v", a.opts.CheckTimeout, DefaultCheckTimeout)
	}
	if got, want := a.Status().StaleAfter, 3*time.Minute+DefaultCheckTimeout; got != want {
		t.Errorf("StaleAfter %v, want %v", got, want)
	}
}

// TestStatusStale: the agent is stale once it has not finished a check,
// failed or not, for longer than StaleAfter; never while it waits for
// its first list of the objects.
func TestStatusStale(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := &Status{Started: t0, StaleAfter: 5 * time.Minute}
	if _, stale := s.Stale(t0.Add(time.Hour)); stale {
		t.Error("stale before the objects are listed")
	}
	s.Synced, s.SyncedAt = true, t0
	if _, stale := s.Stale(t0.Add(4 * time.Minute)); stale {
		t.Error("stale 4m after the list, before the first check")
	}
	if d, stale := s.Stale(t0.Add(6 * time.Minute)); !stale || d != 6*time.Minute {
		t.Errorf("no check 6m after the list: %v %v, want stale for 6m", d, stale)
	}
	s.Last = &Check{At: t0.Add(5 * time.Minute), Duration: time.Minute, Err: context.DeadlineExceeded}
	if _, stale := s.Stale(t0.Add(10 * time.Minute)); stale {
		t.Error("stale 4m after a failed check ended")
	}
	if d, stale := s.Stale(t0.Add(12 * time.Minute)); !stale || d != 6*time.Minute {
		t.Errorf("6m after the last check ended: %v %v", d, stale)
	}
}
