//go:build linux

package nftables

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
)

// TestKernelFingerprint: in a namespace of the test's, the nf_tables
// digest stays while nothing changes and moves with a table, a rule, an
// element and an iptables-nft rule.
func TestKernelFingerprint(t *testing.T) {
	ns := kernelNetns(t)
	digest := func() []byte {
		t.Helper()
		var d []byte
		if err := netns.Run(filepath.Join("/run/netns", ns), func() (err error) {
			d, err = Loader{}.KernelFingerprint(context.Background())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	last := digest()
	for _, argv := range [][]string{
		{"nft", "add", "table", "inet", "svctest"},
		{"nft", "add", "chain", "inet", "svctest", "c", "{ type filter hook input priority 0; }"},
		{"nft", "add", "set", "inet", "svctest", "s", "{ type ipv4_addr; }"},
		{"nft", "add", "element", "inet", "svctest", "s", "{ 10.0.0.1 }"},
		{"iptables-nft", "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "81", "-j", "DROP"},
	} {
		inNetns(t, ns, "", argv...)
		d := digest()
		if bytes.Equal(d, last) {
			t.Fatalf("%v left the digest as it was", argv)
		}
		if again := digest(); !bytes.Equal(d, again) {
			t.Fatalf("after %v, nothing changed and the digest moved", argv)
		}
		last = d
	}
}
