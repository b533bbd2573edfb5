//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/test/lab"
)

// useLegacyIPTables puts iptables, ip6tables and their -save and -restore, linked to the
// legacy backend, first in PATH for the test: kube-proxy runs the plain names from PATH (the
// lab starts it with the test's environment), so it writes to the legacy backend, as on a
// node whose alternatives point there. Without the legacy tools it logs so and leaves PATH.
func useLegacyIPTables(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		target, err := exec.LookPath(strings.Replace(name, "tables", "tables-legacy", 1))
		if err != nil {
			t.Logf("no legacy iptables (%v): kube-proxy uses the system's default backend", err)
			return
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// iptablesBackend tells which backend holds kube-proxy's chains: "legacy" or "nf_tables".
func iptablesBackend(t *testing.T, l *lab.Lab) string {
	t.Helper()
	for _, b := range []struct{ name, save string }{{"legacy", "iptables-legacy-save"}, {"nf_tables", "iptables-nft-save"}} {
		out, err := l.Exec("node1", b.save, "-t", "nat")
		if err == nil && strings.Contains(out, ":KUBE-SERVICES") {
			return b.name
		}
	}
	t.Fatal("kube-proxy's KUBE-SERVICES chain is in neither iptables backend")
	return ""
}
