package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExcerptAndBackendFlags: a real dump cut before its COMMIT (wild dump
// 35) is refused by collect with the hint to give it as an excerpt, and
// read with --excerpt, the drift report saying it is one; --backend takes
// only the two backends.
func TestExcerptAndBackendFlags(t *testing.T) {
	const cut = "../../testdata/wild/35-kubeadm-docker-forward-drop.iptables-save"
	snap := filepath.Join(t.TempDir(), "cut.snap")
	_, stderr, code := run(t, "collect", "--node", "n1", "--iptables-save", cut, "-f", snap)
	if code != 2 || !strings.Contains(stderr, "has no COMMIT") || !strings.Contains(stderr, "--excerpt") {
		t.Fatalf("without --excerpt: exit %d, %q; want 2 and the hint", code, stderr)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Error("a snapshot was written for a refused dump")
	}
	if _, stderr, code := run(t, "collect", "--node", "n1", "--excerpt", "--iptables-save", cut, "-f", snap); code != 0 {
		t.Fatalf("with --excerpt: exit %d, %s", code, stderr)
	}
	out, _, code := run(t, "drift", "--snapshot", snap)
	if code != 0 || !strings.Contains(out, "an excerpt of its rules") || !strings.Contains(out, "no drift in what the excerpt shows") {
		t.Errorf("drift on the excerpt: exit %d\n%s", code, out)
	}
	_, stderr, code = run(t, "collect", "--node", "n1", "--backend", "nft", "--iptables-save", cut, "--excerpt", "-f", snap)
	if code == 0 || !strings.Contains(stderr, `unknown backend "nft": want nf_tables or legacy`) {
		t.Errorf("--backend nft: exit %d, %q", code, stderr)
	}
}
