//go:build linux

package iptables

import (
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestWatchKernel: in a namespace of the test's, the legacy tables' first
// rule (which loads the table), a rule added, an IPv6 rule and a rule
// deleted are each told within two polls; nothing is told while nothing
// changes; the watch ends with its context.
func TestWatchKernel(t *testing.T) {
	ns := legacyNetns(t)
	netnstest.Need(t, "iptables-legacy", "ip6tables-legacy")
	changed := netnstest.Watch(t, ns, Loader{}.WatchKernel)
	time.Sleep(200 * time.Millisecond) // its first look, at nothing
	for _, argv := range [][]string{
		{"iptables-legacy", "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP"},
		{"iptables-legacy", "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "81", "-j", "DROP"},
		{"ip6tables-legacy", "-t", "nat", "-N", "KUBE-TEST"},
		{"iptables-legacy", "-t", "filter", "-D", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP"},
	} {
		netnstest.Run(t, ns, "", argv...)
		select {
		case <-changed:
		case <-time.After(2*legacyPoll + 500*time.Millisecond):
			t.Fatalf("%v was not told within two polls", argv)
		}
		select {
		case <-changed:
			t.Fatal("told of a change while nothing changed")
		case <-time.After(legacyPoll + 200*time.Millisecond):
		}
	}
}
