package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netnstest"
)

// requireRoot skips without root, except under CI where every test must run.
func requireRoot(t *testing.T) { t.Helper(); netnstest.Need(t) }

func requireTools(t *testing.T, tools ...string) { t.Helper(); netnstest.Need(t, tools...) }

// netns creates a network namespace that is removed when the test ends.
func netns(t *testing.T) string { t.Helper(); return netnstest.New(t, "cli") }

func inNetns(t *testing.T, ns string, stdin string, args ...string) (string, int) {
	t.Helper()
	return netnstest.Exec(t, ns, stdin, args...)
}

func buildBinary(t *testing.T) string {
	t.Helper()
	// The test binary is the CLI when runAsCLIEnv says so (TestMain): a
	// script that runs it so stands for the built binary, without a
	// build of its own for each test.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-svctrace")
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runAsCLIEnv, self)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestLocalCollectRealKernel loads the captured kube-proxy rules into a
// fresh network namespace through iptables-nft-restore, reads them back
// with --local, and checks that the kernel's own rendering gives no drift;
// then a KUBE chain in the legacy backend gives a BackendSplitBrain.
func TestLocalCollectRealKernel(t *testing.T) {
	requireRoot(t)
	requireTools(t, "ip", "iptables-nft-restore", "iptables-legacy")
	ns := netns(t)
	bin := buildBinary(t)
	restoreNode1(t, ns, "iptables-nft-restore")
	out, code := inNetns(t, ns, "", bin, "drift", "--local", "--node", "node1", "--objects", fixture+"objects.yaml", "--kube-proxy-metrics-address", "127.0.0.1:1")
	if code != 0 {
		t.Fatalf("drift --local on the restored rules: exit %d:\n%s", code, out)
	}
	snap := filepath.Join(t.TempDir(), "local.yaml")
	if out, code := inNetns(t, ns, "", bin, "collect", "--local", "--node", "node1", "--objects", fixture+"objects.yaml", "--kube-proxy-metrics-address", "127.0.0.1:1", "-f", snap); code != 0 {
		t.Fatalf("collect --local: exit %d: %s", code, out)
	}
	out, code = inNetns(t, ns, "", bin, "explain", "default/nginx", "--snapshot", snap)
	if code != 0 || strings.Count(out, "1/3   10.244.") != 3 {
		t.Fatalf("explain on the local snapshot: exit %d:\n%s", code, out)
	}

	if out, code := inNetns(t, ns, "", "iptables-legacy", "-t", "nat", "-N", "KUBE-SERVICES"); code != 0 {
		t.Fatalf("iptables-legacy: %s", out)
	}
	out, code = inNetns(t, ns, "", bin, "drift", "--local", "--node", "node1", "--objects", fixture+"objects.yaml", "--kube-proxy-metrics-address", "127.0.0.1:1")
	if code != 1 || !strings.Contains(out, "BackendSplitBrain") {
		t.Fatalf("KUBE chains in both backends: exit %d, want 1 with BackendSplitBrain:\n%s", code, out)
	}
}

// TestLocalNFTablesRead: on a node in nftables mode, --local reads the
// ruleset over netlink; a ruleset the netlink reader does not translate (a
// limit, here beside kube-proxy's table) is read with nft -j instead, with
// the same answers; without nft either, the note says why nothing read it.
func TestLocalNFTablesRead(t *testing.T) {
	requireRoot(t)
	requireTools(t, "ip", "nft", "iptables-nft-save")
	ns := netns(t)
	bin := buildBinary(t)
	fix := fixture
	rules, err := os.ReadFile(fix + "node2.nft.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out, code := inNetns(t, ns, string(rules), "nft", "-f", "-"); code != 0 {
		t.Fatalf("nft -f: exit %d: %s", code, out)
	}
	origin := func() string {
		t.Helper()
		return collectExplained(t, ns, bin, "node2", "shop/cart", func(out string) bool { return strings.Contains(out, "10.244.1.21:8080") })
	}
	if s := origin(); !strings.Contains(s, `"origin":"nf_tables (netlink)"`) {
		t.Errorf("kube-proxy's ruleset was not read over netlink")
	}
	if out, code := inNetns(t, ns, "table ip other {\n chain c {\n type filter hook input priority 0; policy accept;\n limit rate 5/second accept\n }\n}\n", "nft", "-f", "-"); code != 0 {
		t.Fatalf("nft -f: exit %d: %s", code, out)
	}
	if s := origin(); !strings.Contains(s, `"origin":"nft -j list ruleset"`) {
		t.Errorf("a ruleset the reader does not translate was not read with nft -j")
	}
	// Without nft (the iptables tools alone on the PATH): only the note.
	path := t.TempDir()
	for _, tool := range []string{"iptables-nft-save", "iptables-legacy-save", "ip6tables-nft-save", "ip6tables-legacy-save"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(path, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap := filepath.Join(t.TempDir(), "nonft.snap")
	out, code := inNetns(t, ns, "", "env", "PATH="+path, bin, "collect", "--local", "--node", "node2", "--objects", fix+"objects.yaml",
		"--kube-proxy-metrics-address", "127.0.0.1:1", "-f", snap)
	if code != 0 {
		t.Fatalf("collect --local without nft: exit %d: %s", code, out)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "nft not installed") || !strings.Contains(string(b), `reading it directly failed too`) || !strings.Contains(string(b), `limit`) {
		t.Errorf("the snapshot's notes do not say why the ruleset was not read:\n%.2000s", b)
	}
}

// TestLocalLegacyRead: on a node whose kube-proxy writes the legacy
// backend, --local reads its tables from the kernel itself, as
// iptables-legacy-save would print them; tables holding a rule the reader
// does not print (a length match here) are read with the tool instead.
func TestLocalLegacyRead(t *testing.T) {
	requireRoot(t)
	requireTools(t, "ip", "iptables-legacy-restore", "iptables-legacy", "iptables-legacy-save")
	ns := netns(t)
	bin := buildBinary(t)
	restoreNode1(t, ns, "iptables-legacy-restore")
	args := []string{"--node", "node1", "--objects", fixture + "objects.yaml", "--kube-proxy-metrics-address", "127.0.0.1:1"}
	if out, code := inNetns(t, ns, "", append([]string{bin, "drift", "--local"}, args...)...); code != 0 {
		t.Fatalf("drift --local on the restored rules: exit %d:\n%s", code, out)
	}
	origin := func() string {
		t.Helper()
		return collectExplained(t, ns, bin, "node1", "default/nginx", func(out string) bool { return strings.Count(out, "1/3   10.244.") == 3 })
	}
	if s := origin(); !strings.Contains(s, `"origin":"x_tables (getsockopt)"`) {
		t.Errorf("kube-proxy's legacy tables were not read from the kernel")
	}
	if out, code := inNetns(t, ns, "", "iptables-legacy", "-A", "INPUT", "-m", "length", "--length", "0:100", "-j", "ACCEPT"); code != 0 {
		t.Fatalf("iptables-legacy: %s", out)
	}
	if s := origin(); !strings.Contains(s, `"origin":"iptables-legacy-save"`) {
		t.Errorf("tables the reader does not print were not read with iptables-legacy-save")
	}
}

// collectExplained runs collect --local for the node in the namespace,
// checks that explain of the Service on the snapshot it wrote answers as
// explained says, and returns the snapshot's bytes.
func collectExplained(t *testing.T, ns, bin, node, service string, explained func(out string) bool) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "local.snap")
	if out, code := inNetns(t, ns, "", bin, "collect", "--local", "--node", node, "--objects", fixture+"objects.yaml",
		"--kube-proxy-metrics-address", "127.0.0.1:1", "-f", snap); code != 0 {
		t.Fatalf("collect --local: exit %d: %s", code, out)
	}
	out, code := inNetns(t, ns, "", bin, "explain", service, "--snapshot", snap)
	if code != 0 || !explained(out) {
		t.Fatalf("explain %s on the local snapshot: exit %d:\n%s", service, code, out)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// restoreNode1 loads the captured kube-proxy rules of node1 into the
// namespace with restore (iptables-nft-restore, iptables-legacy-restore).
func restoreNode1(t *testing.T, ns, restore string) {
	t.Helper()
	dump, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	// nfacct counters are objects kube-proxy creates first; without the
	// nfacct tool the restore cannot, so those matches (which match every
	// packet) are left out.
	rules := regexp.MustCompile(` -m nfacct --nfacct-name +\S+`).ReplaceAllString(string(dump), "")
	if out, code := inNetns(t, ns, rules, restore); code != 0 {
		t.Fatalf("%s: exit %d: %s", restore, code, out)
	}
}
