package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/dataplane"
)

// writeTestBackup writes a backup of node1 in mode, as TakeBackup does,
// and returns its path.
func writeTestBackup(t *testing.T, dir, node, mode string) string {
	t.Helper()
	b := &RulesBackup{APIVersion: "svctrace.dev/v1alpha1", Kind: "RulesBackup", Node: node, Mode: mode, TakenAt: time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC),
		Families: []dataplane.BackupPart{{Mode: mode, Family: "IPv4", Backend: "nf_tables", Text: "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"}}}
	path := filepath.Join(dir, BackupName(node, b.TakenAt))
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A backup whose content does not match its checksum, or that has none,
// is refused, naming the file and why.
func TestLoadBackupChecksum(t *testing.T) {
	dir := t.TempDir()
	path := writeTestBackup(t, dir, "node1", "iptables")
	if _, err := LoadBackup(path); err != nil {
		t.Fatalf("a whole backup: %v", err)
	}
	data, _ := os.ReadFile(path)
	edit := func(name, from, to string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"rule.yaml", ":PREROUTING ACCEPT", ":PREROUTING DROP", "the checksum does not match"},
		{"node.yaml", "node: node1", "node: node2", "the checksum does not match"},
		{"mode.yaml", "mode: iptables\n", "mode: nftables\n", "the checksum does not match"},
	} {
		p := edit(c.name, c.from, c.to)
		_, err := LoadBackup(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming the file and saying %q", c.name, err, c.want)
		}
	}
	var b RulesBackup
	if err := yaml.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	b.Checksum = ""
	old, _ := yaml.Marshal(&b)
	p := filepath.Join(dir, "old.yaml")
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBackup(p); err == nil || !strings.Contains(err.Error(), "has no checksum") {
		t.Errorf("a backup without a checksum: %v", err)
	}
}

// A backup of another node, or of another mode than kube-proxy's there,
// is refused before anything is read or written.
func TestRollbackRefusesOtherNodeOrMode(t *testing.T) {
	b, err := LoadBackup(writeTestBackup(t, t.TempDir(), "node1", "iptables"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target RollbackTarget
		want   string
	}{
		{RollbackTarget{Node: "node2", Mode: "iptables"}, "taken on node node1, and this is node node2"},
		{RollbackTarget{Node: "node1", Mode: "nftables"}, "kube-proxy runs in nftables mode on node node1"},
		{RollbackTarget{Mode: "iptables"}, "name it with --node"},
	} {
		done, err := RollbackRules(context.Background(), b, c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(done) > 0 {
			t.Errorf("%+v: %v, want %q and nothing done", c.target, err, c.want)
		}
	}
}

// The node's oldest backups go, the newest kept; other nodes' and other
// files stay.
func TestRotateBackups(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var names []string
	for i := range 5 {
		names = append(names, BackupName("node1", at.Add(time.Duration(i)*time.Hour)))
	}
	others := []string{BackupName("node1-b", at), BackupName("node2", at), "notes.txt"}
	for _, n := range append(slices.Clone(names), others...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	notes := rotateBackups(filepath.Join(dir, names[4]), "node1", 3)
	if len(notes) != 2 {
		t.Errorf("notes %q, want two removals", notes)
	}
	for i, n := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if kept := err == nil; kept != (i >= 2) {
			t.Errorf("%s kept %v", n, kept)
		}
	}
	for _, n := range others {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}
