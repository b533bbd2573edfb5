//go:build linux

package conntrack

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// testNS is a network namespace a test made; the test's cleanup deletes it
// with every conntrack entry in it.
type testNS struct{ name, path string }

// newNetns makes the test's namespace (netnstest: named svct-ct-PID-RANDOM,
// and a failure under CI=true without root or one of tools).
func newNetns(t testing.TB, tools ...string) testNS {
	t.Helper()
	ns := testNS{name: netnstest.New(t, "ct", tools...)}
	ns.path = "/run/netns/" + ns.name
	ns.run(t, "ip", "link", "set", "lo", "up")
	return ns
}

// run runs argv inside the namespace (ip netns exec) and returns stdout.
func (ns testNS) run(t testing.TB, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.name}, argv...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in %s: %s: %v: %s", ns.name, strings.Join(argv, " "), err, stderr.String())
	}
	return string(out)
}

// do runs fn on a thread inside the namespace; fn must not call t.Fatal.
func (ns testNS) do(t testing.TB, fn func() error) {
	t.Helper()
	if err := netns.Run(ns.path, fn); err != nil {
		t.Fatal(err)
	}
}

// dumpAll returns every entry of the namespace that passes f.
func (ns testNS) dumpAll(t testing.TB, f Filter) ([]Entry, DumpStats) {
	t.Helper()
	var got []Entry
	var st DumpStats
	ns.do(t, func() error {
		var err error
		st, err = Dump(context.Background(), f, func(e Entry) error {
			got = append(got, e)
			return nil
		})
		return err
	})
	return got, st
}

// create adds entries to the namespace in batches.
func (ns testNS) create(t testing.TB, entries ...Entry) {
	t.Helper()
	ns.do(t, func() error { return createEntries(context.Background(), entries) })
}
