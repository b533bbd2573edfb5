package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/reconcile"
)

// rollbackBackup writes a whole backup of node1's iptables mode.
func rollbackBackup(t *testing.T) string {
	t.Helper()
	b := &reconcile.RulesBackup{APIVersion: "svctrace.dev/v1alpha1", Kind: "RulesBackup", Node: "node1", Mode: "iptables", TakenAt: time.Now().UTC(),
		Families: []dataplane.BackupPart{{Mode: "iptables", Family: "IPv4", Backend: "nf_tables", Text: "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"}}}
	path := filepath.Join(t.TempDir(), reconcile.BackupName("node1", b.TakenAt))
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// reconcile rollback refuses a backup of another node, of another mode than
// kube-proxy's there, a damaged one, and one while the node's lock is held,
// each before anything is written.
func TestReconcileRollbackRefuses(t *testing.T) {
	path := rollbackBackup(t)
	lock := filepath.Join(t.TempDir(), "apply.lock")
	configz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/configz" {
			w.Write([]byte(`{"kubeproxy.config.k8s.io":{"mode":"nftables"}}`))
		}
	}))
	defer configz.Close()
	nftProxy := strings.TrimPrefix(configz.URL, "http://")
	data, _ := os.ReadFile(path)
	damaged := filepath.Join(t.TempDir(), "damaged.yaml")
	if err := os.WriteFile(damaged, []byte(strings.Replace(string(data), "PREROUTING ACCEPT", "PREROUTING DROP", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"another node", []string{"--node", "node2", path}, "taken on node node1, and this is node node2"},
		{"another mode", []string{"--node", "node1", "--kube-proxy-metrics-address", nftProxy, path}, "kube-proxy runs in nftables mode on node node1"},
		{"damaged", []string{"--node", "node1", damaged}, damaged + ": the checksum does not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"reconcile", "rollback", "--local", "--lock-file", lock}, c.args...)...)
			if code != exitError || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
	t.Run("locked", func(t *testing.T) {
		l, err := reconcile.LockNode(lock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		_, stderr, code := run(t, "reconcile", "rollback", "--local", "--lock-file", lock, "--node", "node1", path)
		if code != exitError || !strings.Contains(stderr, "another reconcile --apply is running (pid ") {
			t.Errorf("exit %d, %q; want 2 and the lock's holder", code, stderr)
		}
	})
}
