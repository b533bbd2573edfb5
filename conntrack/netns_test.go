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
// with every conntrack entry in it. Or, with path "", no namespace: a
// recording of one played back (see record_test.go).
type testNS struct {
	name, path string
	// tab is the table the test's netlink calls go to: the kernel's, a
	// recorder of it or a player of a recording.
	tab table
	// rec is the recording this test writes (SVCTRACE_RECORD=1) or plays.
	rec recording
}

// newNetns makes the test's namespace (netnstest: named svct-ct-PID-RANDOM,
// and a failure under CI=true without root or one of tools).
func newNetns(t testing.TB, tools ...string) testNS {
	t.Helper()
	ns := testNS{name: netnstest.New(t, "ct", tools...), tab: kernelTable()}
	ns.path = "/run/netns/" + ns.name
	ns.run(t, "ip", "link", "set", "lo", "up")
	return ns
}

// run runs argv inside the namespace (ip netns exec) and returns stdout.
func (ns testNS) run(t testing.TB, argv ...string) string {
	t.Helper()
	if ns.path == "" {
		t.Fatalf("%s: no namespace to run in: a recording is played back", strings.Join(argv, " "))
	}
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
	run := func(fn func() error) error { return netns.Run(ns.path, fn) }
	if ns.path == "" {
		run = func(fn func() error) error { return fn() }
	}
	if err := run(fn); err != nil {
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
		st, err = ns.tab.dump(context.Background(), f, func(e Entry) error {
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
	ns.do(t, func() error { return ns.tab.create(context.Background(), entries) })
}
