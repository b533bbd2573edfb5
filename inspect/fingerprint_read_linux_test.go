//go:build linux

package inspect

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestReadFingerprint: the agent's read of a namespace gives the kernel's
// fingerprint of the state it read (the legacy tables' part taken by the
// read itself, the nf_tables generation before it): the one
// KernelFingerprint gives after the read while nothing changed, and not
// the one after an nf_tables change or a legacy one. A read's goroutines
// read the namespace of the process, which the test therefore runs in.
func TestReadFingerprint(t *testing.T) {
	if os.Getenv("SVCTRACE_TEST_NETNS") == "" {
		ns := netnstest.New(t, "readfp", "iptables-legacy", "iptables-legacy-save", "ip6tables-legacy-save", "nft")
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run", "^TestReadFingerprint$", "-test.v")
		cmd.Env = append(os.Environ(), "SVCTRACE_TEST_NETNS="+ns)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestReadFingerprint") {
			t.Fatalf("in namespace %s: %v\n%s", ns, err, out)
		}
		return
	}
	run := func(argv ...string) {
		t.Helper()
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
	run("iptables-legacy", "-A", "INPUT", "-p", "tcp", "--dport", "80", "-j", "DROP")
	rr := NewRuleReader()
	for _, p := range rr.prints {
		if p.mode == "iptables" && p.reader == nil {
			t.Fatal("the legacy tables' part is not taken by the read")
		}
	}
	readOnce := func() []byte {
		t.Helper()
		r := rr.Read(context.Background())()
		if r.Err != nil || r.Fingerprint == nil {
			t.Fatalf("the read has no fingerprint (%v)", r.Err)
		}
		return r.Fingerprint
	}
	kernel := func() []byte {
		t.Helper()
		fp, err := KernelFingerprint(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	read, after := readOnce(), kernel()
	if !bytes.Equal(read, after) {
		t.Fatalf("the read's fingerprint\n%q\nKernelFingerprint after it\n%q", read, after)
	}
	if !bytes.Contains(read, []byte("legacy IPv4")) {
		t.Fatalf("no legacy tables in the fingerprint %q", read)
	}
	run("nft", "add", "table", "inet", "other")
	if bytes.Equal(read, kernel()) {
		t.Error("an nf_tables change left the fingerprint of the read as it was")
	}
	read = readOnce()
	run("iptables-legacy", "-R", "INPUT", "1", "-p", "tcp", "--dport", "80", "-j", "ACCEPT")
	if bytes.Equal(read, kernel()) {
		t.Error("a legacy rule replaced left the fingerprint of the read as it was")
	}
}
