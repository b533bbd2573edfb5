// Package slowtest marks the tests that take minutes on a cold machine
// (a release built for six platforms, the image's Debian packages
// downloaded, Prometheus built): a contributor's go test ./... leaves
// them out, saying why, and CI=true (or SVCTRACE_SLOW_TESTS=1) runs them.
package slowtest

import (
	"os"
	"testing"
)

// Need skips t, which does what (for the message), unless slow tests are
// asked for.
func Need(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" || os.Getenv("SVCTRACE_SLOW_TESTS") == "1" {
		return
	}
	t.Skipf("%s, which takes minutes: run under CI=true or with SVCTRACE_SLOW_TESTS=1", what)
}
