//go:build linux

package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// TestReadFingerprint: the agent's reader digests the tables it reads as
// KernelFingerprint does, so that the digest of a read equals the one taken
// after it while nothing changed, and differs from the one taken after a
// rule was replaced by one of the same length; a read of one family only
// has no digest.
func TestReadFingerprint(t *testing.T) {
	ns := legacyNetns(t)
	netnstest.Need(t, "iptables-legacy")
	netnstest.Run(t, ns, "", "iptables-legacy", "-A", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP")
	netnstest.Run(t, ns, "", "ip6tables-legacy", "-A", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP")
	r := Loader{}.Repeated().(*digestingReader)
	var read, after []byte
	var oneFamily error
	if err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		for _, c := range []string{CollectorSave, CollectorSave6} {
			if d, err := r.ReadKernel(c, "legacy"); err != nil || !strings.Contains(d.Text, "--dport 80 -j DROP") {
				return fmt.Errorf("%s: %v, text %q", c, err, d.Text)
			}
		}
		var err error
		if read, err = r.ReadFingerprint(); err != nil {
			return err
		}
		if after, err = (Loader{}).KernelFingerprint(context.Background()); err != nil {
			return err
		}
		if _, err := r.ReadKernel(CollectorSave, "legacy"); err != nil {
			return err
		}
		_, oneFamily = r.ReadFingerprint()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read, after) {
		t.Fatalf("the read's digest %q, KernelFingerprint after it %q", read, after)
	}
	if oneFamily == nil {
		t.Error("a read of IPv4's tables alone gave a digest")
	}
	netnstest.Run(t, ns, "", "ip6tables-legacy", "-R", "INPUT", "1", "-p", "tcp", "--dport", "80", "-j", "ACCEPT")
	if err := netns.Run(filepath.Join("/run/netns", ns), func() (err error) {
		after, err = Loader{}.KernelFingerprint(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(read, after) {
		t.Error("an IPv6 rule replaced by one of the same length left the digest of the read as it was")
	}
	// A rule the reader does not print (a length match): the tool reads the
	// family instead, and the reads still have their digest.
	netnstest.Run(t, ns, "", "iptables-legacy", "-A", "INPUT", "-m", "length", "--length", "100", "-j", "DROP")
	var untranslated error
	if err := netns.Run(filepath.Join("/run/netns", ns), func() error {
		for _, c := range []string{CollectorSave, CollectorSave6} {
			if _, err := r.ReadKernel(c, "legacy"); err != nil {
				untranslated = err
			}
		}
		var err error
		if read, err = r.ReadFingerprint(); err != nil {
			return err
		}
		after, err = Loader{}.KernelFingerprint(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(untranslated, ErrNotTranslated) {
		t.Fatalf("a length match read: %v, want ErrNotTranslated", untranslated)
	}
	if !bytes.Equal(read, after) {
		t.Errorf("with a rule the reader does not print, the reads' digest\n%q\nKernelFingerprint after them\n%q", read, after)
	}
}
