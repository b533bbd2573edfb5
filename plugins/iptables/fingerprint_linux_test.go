//go:build linux

package iptables

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestKernelFingerprint: in a namespace of the test's, the legacy tables'
// digest stays while nothing changes and while only their counters do
// (traffic), and moves when a rule is replaced by one of the same length,
// which the watch's poll of the tables' sizes cannot see.
func TestKernelFingerprint(t *testing.T) {
	ns := legacyNetns(t)
	netnstest.Need(t, "iptables-legacy")
	in := func(f func() error) {
		t.Helper()
		if err := netns.Run(filepath.Join("/run/netns", ns), f); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() []byte {
		t.Helper()
		var d []byte
		in(func() (err error) {
			d, err = Loader{}.KernelFingerprint(context.Background())
			return err
		})
		return d
	}
	sizes := func() []byte {
		t.Helper()
		var d []byte
		in(func() (err error) {
			d, err = legacyFingerprint()
			return err
		})
		return d
	}
	none := digest()
	netnstest.Run(t, ns, "", "iptables-legacy", "-A", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP")
	netnstest.Run(t, ns, "", "iptables-legacy", "-A", "OUTPUT", "-c", "7", "700", "-p", "tcp", "--dport", "81", "-j", "ACCEPT")
	first := digest()
	if bytes.Equal(none, first) {
		t.Fatal("rules added, the digest stayed")
	}
	if again := digest(); !bytes.Equal(first, again) {
		t.Fatal("nothing changed, the digest moved")
	}
	netnstest.Run(t, ns, "", "iptables-legacy", "-Z")
	if zeroed := digest(); !bytes.Equal(first, zeroed) {
		t.Fatal("only the counters changed (iptables -Z), the digest moved")
	}
	before := sizes()
	netnstest.Run(t, ns, "", "iptables-legacy", "-R", "INPUT", "1", "-p", "tcp", "--dport", "80", "-j", "ACCEPT")
	if !bytes.Equal(before, sizes()) {
		t.Fatal("the replacement changed the tables' sizes: it does not show what the digest adds")
	}
	if replaced := digest(); bytes.Equal(first, replaced) {
		t.Fatal("a rule replaced by one of the same length left the digest as it was")
	}
}
