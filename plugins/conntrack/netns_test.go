package conntrack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Test namespaces are named svct-ct-<pid>-<random>; TestMain removes those
// of test processes that died without cleaning up (a timeout, a kill).
const nsPrefix = "svct-ct-"

func TestMain(m *testing.M) {
	cleanupStale()
	os.Exit(m.Run())
}

func cleanupStale() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	re := regexp.MustCompile(`^` + nsPrefix + `([0-9]+)-`)
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); err == nil || err == syscall.EPERM {
			continue // still running
		}
		_ = exec.Command("ip", "netns", "del", e.Name()).Run()
	}
}

// needRoot skips the test, or fails it when CI=true, if it cannot create
// network namespaces or lacks one of tools.
func needRoot(t testing.TB, tools ...string) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root to create network namespaces"
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = tool + " not found in PATH"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// testNS is a network namespace a test made; the test's cleanup deletes it
// with every conntrack entry in it.
type testNS struct{ name, path string }

func newNetns(t testing.TB, tools ...string) testNS {
	t.Helper()
	needRoot(t, tools...)
	ns := testNS{name: fmt.Sprintf("%s%d-%08x", nsPrefix, os.Getpid(), rand.Uint32())}
	ns.path = "/run/netns/" + ns.name
	if out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns.name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns.name, err, out)
		}
	})
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
	if err := InNetns(ns.path, fn); err != nil {
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
