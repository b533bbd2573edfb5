package agent

import (
	"errors"
	"testing"
	"time"

	"github.com/svctrace/svctrace/behavior"
)

// TestCanConfirm: a period confirms the last check only where the kernel
// notifies every change of the rules, the watch has run since before that
// check's read, nothing changed since, nothing was found, and the last full
// read is younger than FullInterval.
func TestCanConfirm(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	nft := func() *Check {
		return &Check{At: t0.Add(time.Minute), KubeProxy: KubeProxy{Mode: "nftables"}}
	}
	q := quiet{watching: true, watchSince: t0, fullInterval: 10 * time.Minute}
	now := t0.Add(2 * time.Minute)
	if g := nft(); !canConfirm(g, g, q, now) {
		t.Fatal("an idle nftables node is not confirmed")
	}
	cases := []struct {
		name string
		edit func(good *Check, q *quiet, now *time.Time) *Check // returns the last check
	}{
		{"no check yet", func(_ *Check, _ *quiet, _ *time.Time) *Check { return nil }},
		{"the last check failed", func(_ *Check, _ *quiet, _ *time.Time) *Check {
			return &Check{At: t0.Add(90 * time.Second), Err: errors.New("x")}
		}},
		{"legacy tables", func(g *Check, _ *quiet, _ *time.Time) *Check {
			g.KubeProxy.Mode, g.KubeProxy.Backend = "iptables", "legacy"
			return g
		}},
		{"ipvs", func(g *Check, _ *quiet, _ *time.Time) *Check { g.KubeProxy.Mode = "ipvs"; return g }},
		{"mode unknown", func(g *Check, _ *quiet, _ *time.Time) *Check { g.KubeProxy.Mode = ""; return g }},
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
		{"the watch failed", func(g *Check, q *quiet, _ *time.Time) *Check { q.watching = false; return g }},
		{"the read began as the watch started", func(g *Check, q *quiet, _ *time.Time) *Check {
			q.watchSince = g.At.Add(-watchSettle / 2)
			return g
		}},
		{"a change after the check began", func(g *Check, q *quiet, _ *time.Time) *Check {
			q.pokedAt = g.At.Add(time.Millisecond)
			return g
		}},
		{"the last full read is FullInterval old", func(g *Check, _ *quiet, now *time.Time) *Check {
			*now = g.At.Add(10 * time.Minute)
			return g
		}},
		{"a confirmation whose read is FullInterval old", func(g *Check, _ *quiet, now *time.Time) *Check {
			g.Confirms = g.At
			g.At = g.At.Add(9 * time.Minute)
			*now = g.Confirms.Add(10 * time.Minute)
			return g
		}},
	}
	for _, c := range cases {
		g, q, now := nft(), q, now
		last := c.edit(g, &q, &now)
		if last == nil {
			g = nil
		}
		if canConfirm(last, g, q, now) {
			t.Errorf("%s: confirmed", c.name)
		}
	}
	// iptables mode on the nf_tables backend is notified; a change before
	// the check began is in its read.
	g := nft()
	g.KubeProxy.Mode, g.KubeProxy.Backend = "iptables", "nf_tables"
	q.pokedAt = g.At.Add(-time.Millisecond)
	if !canConfirm(g, g, q, now) {
		t.Error("an idle iptables node on the nf_tables backend is not confirmed")
	}
	// A confirmation is confirmed again until its read is FullInterval old.
	g.Confirms, g.At = g.At, g.At.Add(8*time.Minute)
	if !canConfirm(g, g, q, g.At.Add(time.Minute)) {
		t.Error("a confirmation 9m after the read is not confirmed again")
	}
}
