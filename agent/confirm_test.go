package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/svctrace/behavior"
)

// TestCanConfirm: a period may confirm the last check only when that check
// read the node after a digest of its kernel state was taken, nothing
// changed since it began, nothing was found, and the last full read is
// younger than FullInterval.
func TestCanConfirm(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	idle := func() *Check {
		return &Check{At: t0.Add(time.Minute), Fingerprint: []byte("nf_tables generation 7"), KubeProxy: KubeProxy{Mode: "iptables", Backend: "legacy"}}
	}
	q := quiet{fullInterval: 10 * time.Minute}
	now := t0.Add(2 * time.Minute)
	if g := idle(); !canConfirm(g, g, q, now) {
		t.Fatal("an idle node whose state has a digest is not confirmed")
	}
	cases := []struct {
		name string
		edit func(good *Check, q *quiet, now *time.Time) *Check // returns the last check
	}{
		{"no check yet", func(_ *Check, _ *quiet, _ *time.Time) *Check { return nil }},
		{"the last check failed", func(_ *Check, _ *quiet, _ *time.Time) *Check {
			return &Check{At: t0.Add(90 * time.Second), Err: errors.New("x")}
		}},
		{"no digest of the state (a plane's digest failed)", func(g *Check, _ *quiet, _ *time.Time) *Check { g.Fingerprint = nil; return g }},
		{"drift found", func(g *Check, _ *quiet, _ *time.Time) *Check {
			g.Drift = []behavior.Finding{{Type: behavior.MissingEndpoint}}
			return g
		}},
		{"a difference pending", func(g *Check, _ *quiet, _ *time.Time) *Check {
			g.Pending = []behavior.Finding{{Type: behavior.MissingEndpoint}}
			return g
		}},
		{"kube-proxy's metrics not read", func(g *Check, _ *quiet, _ *time.Time) *Check {
			g.KubeProxy.MetricsErr = errors.New("refused")
			return g
		}},
		{"the API server down", func(g *Check, _ *quiet, _ *time.Time) *Check { g.APIErr = errors.New("x"); return g }},
		{"a change after the check began", func(g *Check, q *quiet, _ *time.Time) *Check {
			q.pokedAt = g.At.Add(time.Millisecond)
			return g
		}},
		{"the last full read is FullInterval old", func(g *Check, _ *quiet, now *time.Time) *Check {
			*now = g.At.Add(10 * time.Minute)
			return g
		}},
		{"a confirmation whose read is FullInterval old", func(g *Check, _ *quiet, now *time.Time) *Check {
			g.ReadAt = g.At
			g.At = g.At.Add(9 * time.Minute)
			*now = g.ReadAt.Add(10 * time.Minute)
			return g
		}},
	}
	for _, c := range cases {
		g, q, now := idle(), q, now
		last := c.edit(g, &q, &now)
		if last == nil {
			g = nil
		}
		if canConfirm(last, g, q, now) {
			t.Errorf("%s: confirmed", c.name)
		}
	}
	// A change before the check began is in its read.
	g := idle()
	q.pokedAt = g.At.Add(-time.Millisecond)
	if !canConfirm(g, g, q, now) {
		t.Error("a change before the check began stops the confirmation")
	}
	// A confirmation is confirmed again until its read is FullInterval old.
	g.ReadAt, g.At = g.At, g.At.Add(8*time.Minute)
	if !canConfirm(g, g, q, g.At.Add(time.Minute)) {
		t.Error("a confirmation 9m after the read is not confirmed again")
	}
}

// TestConfirmNeedsTheSameDigest: a period whose digest of the kernel state
// differs from the one of the last read, or cannot be taken,
// publishes nothing (the node is read in full), whatever else is quiet.
func TestConfirmNeedsTheSameDigest(t *testing.T) {
	a, err := New(fake.NewClientset(), DefaultOptions("node1"))
	if err != nil {
		t.Fatal(err)
	}
	good := &Check{At: time.Now(), Fingerprint: []byte("legacy tables: digest A")}
	for name, fp := range map[string]func(context.Context) ([]byte, error){
		"another digest": func(context.Context) ([]byte, error) { return []byte("legacy tables: digest B"), nil },
		"no digest":      func(context.Context) ([]byte, error) { return nil, errors.New("a plane's digest failed") },
	} {
		a.fingerprint = fp
		if a.confirm(t.Context(), good) {
			t.Errorf("%s: confirmed", name)
		}
		if s := a.Status(); s.Checks != 0 || s.Good != nil {
			t.Errorf("%s: published %+v", name, s)
		}
	}
}

// TestPeriodAfter: a period is Interval after a check or a cheap
// confirmation; after one that took half a second (the legacy backend's
// digest at 10,000 Services) it is stretched to keep confirmations at half
// a percent of a core, and never beyond twice Interval, which StaleAfter
// allows for.
func TestPeriodAfter(t *testing.T) {
	for _, tc := range []struct {
		took, want time.Duration
	}{
		{0, time.Minute},
		{2 * time.Millisecond, time.Minute},
		{300 * time.Millisecond, time.Minute},
		{520 * time.Millisecond, 104 * time.Second},
		{3 * time.Second, 2 * time.Minute},
	} {
		if got := periodAfter(time.Minute, tc.took); got != tc.want {
			t.Errorf("after a confirmation of %v: a period of %v, want %v", tc.took, got, tc.want)
		}
	}
	if o := DefaultOptions("node1"); 2*o.Interval >= o.StaleAfter() {
		t.Errorf("a stretched period (%v) reaches StaleAfter (%v)", 2*o.Interval, o.StaleAfter())
	}
}
