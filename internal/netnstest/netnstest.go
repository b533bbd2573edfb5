// Package netnstest gives tests a network namespace of their own, for
// the real kernel's netfilter: made when the test asks, removed when it
// ends. Under CI=true a test that lacks root or a tool fails instead of
// skipping.
package netnstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Need skips the test (fails it under CI=true) without root, or without
// ip or one of tools.
func Need(t testing.TB, tools ...string) {
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
		t.Fatal(why + ", and CI=true forbids skipping")
	}
	t.Skip(why)
}

// New makes a network namespace named svct-PREFIX-PID-RANDOM, removed
// when the test ends, and returns its name; it calls Need first, and
// removes the namespaces of the prefix that test processes since killed
// left behind.
func New(t testing.TB, prefix string, tools ...string) string {
	t.Helper()
	Need(t, tools...)
	removeStale(prefix)
	name := fmt.Sprintf("svct-%s-%d-%08x", prefix, os.Getpid(), rand.Uint32())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// removeStale deletes the namespaces svct-PREFIX-PID-* of processes that
// no longer run.
func removeStale(prefix string) {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	re := regexp.MustCompile(`^svct-` + regexp.QuoteMeta(prefix) + `-([0-9]+)-[0-9a-f]{8}$`)
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

// Exec runs argv in the namespace with stdin and returns its output
// (stdout and stderr) and exit code; failing to start it fails the test.
func Exec(t testing.TB, ns, stdin string, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("in %s: %s: %v", ns, strings.Join(argv, " "), err)
	}
	return out.String(), 0
}

// Run runs argv in the namespace with stdin and returns its stdout; a
// failure fails the test with its stderr.
func Run(t testing.TB, ns, stdin string, argv ...string) string {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in %s: %s: %v: %s", ns, strings.Join(argv, " "), err, stderr.String())
	}
	return string(out)
}
