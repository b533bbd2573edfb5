//go:build linux

package nftables

import (
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestWatchKernel: a table added, a rule added and a table deleted in a
// namespace of the test's are each told within a second, through the
// plane's watch run in that namespace; nothing is told while nothing
// changes; the watch ends with its context.
func TestWatchKernel(t *testing.T) {
	ns := kernelNetns(t)
	changed := netnstest.Watch(t, ns, Loader{}.WatchKernel)
	// The watch joins its group once started: repeat the first change
	// until it is heard.
	heard := false
	for i := 0; i < 50 && !heard; i++ {
		inNetns(t, ns, "", "nft", "add", "table", "inet", "svctest")
		select {
		case <-changed:
			heard = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !heard {
		t.Fatal("adding a table was not told within 5 s")
	}
	expectQuiet(t, changed)
	for _, argv := range [][]string{
		{"nft", "add", "chain", "inet", "svctest", "c", "{ type filter hook input priority 0; }"},
		{"nft", "add", "rule", "inet", "svctest", "c", "tcp", "dport", "80", "drop"},
		{"iptables-nft", "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "81", "-j", "DROP"},
		{"nft", "delete", "table", "inet", "svctest"},
	} {
		inNetns(t, ns, "", argv...)
		select {
		case <-changed:
		case <-time.After(time.Second):
			t.Fatalf("%v was not told within 1 s", argv)
		}
		expectQuiet(t, changed)
	}
}

// expectQuiet drains what a change told and checks nothing more comes
// while nothing changes.
func expectQuiet(t *testing.T, changed <-chan struct{}) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-changed:
	default:
	}
	select {
	case <-changed:
		t.Fatal("told of a change while nothing changed")
	case <-time.After(300 * time.Millisecond):
	}
}
