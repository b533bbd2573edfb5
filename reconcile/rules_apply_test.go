//go:build linux

package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot"
)

// droppedRule is the rule of node1's bundled IPv4 dump the tests' kernel
// lacks: the drift their plans repair.
const droppedRule = "-A KUBE-SEP-7I3TWDWYTP3VQEKZ -p tcp -m comment --comment \"default/web-lb:http\" -m tcp -j DNAT --to-destination 10.244.1.10:8080\n"

// driftedNode makes a network namespace (removed when the test ends) and
// the plan of node1 of the bundled iptables snapshot, one rule short. With
// loaded, the namespace holds that node's IPv4 rules (nf_tables backend)
// as the plan read them; else it holds none of kube-proxy's.
func driftedNode(t *testing.T, loaded bool) (string, *RulesPlan) {
	t.Helper()
	ns := netnstest.New(t, "rec", "iptables-nft-restore", "iptables-nft-save")
	netnstest.Nfacct(t, ns, "ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts")
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := s.Node("node1")
	for i := range n.Dumps {
		d := &n.Dumps[i]
		if d.Family == "IPv4" && d.Backend == "nf_tables" {
			d.Text = strings.Replace(d.Text, droppedRule, "", 1)
			if loaded {
				netnstest.Run(t, ns, d.Text, "iptables-nft-restore")
			}
		}
	}
	p, err := PlanRules(s, RulesOptions{Node: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Changes() == 0 {
		t.Fatal("the plan changes nothing")
	}
	return ns, p
}

// inNetns runs fn in the namespace.
func inNetns(t *testing.T, ns string, fn func() error) error {
	t.Helper()
	return netns.Run(filepath.Join("/run/netns", ns), fn)
}

// kernelRules is the namespace's IPv4 rules of the nf_tables backend,
// without the tool's comment lines, and without the tables that hold
// nothing (no rule, no chain of the user's, every policy ACCEPT): the
// nf_tables backend keeps a table once made, and an empty one does
// nothing.
func kernelRules(t *testing.T, ns string) string {
	t.Helper()
	var b, table strings.Builder
	empty := true
	for l := range strings.Lines(netnstest.Run(t, ns, "", "iptables-nft-save")) {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "*"):
			table.Reset()
			table.WriteString(l)
			empty = true
		case l == "COMMIT\n":
			if !empty {
				b.WriteString(table.String() + l)
			}
		default:
			table.WriteString(l)
			empty = empty && strings.HasPrefix(l, ":") && strings.Contains(l, " ACCEPT ")
		}
	}
	return b.String()
}

func applyIn(t *testing.T, ns string, p *RulesPlan, o ApplyOptions) (*RulesApply, error) {
	t.Helper()
	if o.LockFile == "" {
		o.LockFile = filepath.Join(t.TempDir(), "apply.lock")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var res *RulesApply
	err := inNetns(t, ns, func() error {
		var err error
		res, err = ApplyRules(context.Background(), p, o)
		return err
	})
	return res, err
}

// A backup that cannot be written whole (its file system is full) fails
// the apply before anything is written to the kernel, and leaves no file.
func TestApplyBackupNoSpace(t *testing.T) {
	ns, p := driftedNode(t, true)
	before := kernelRules(t, ns)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=8k"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	backup := filepath.Join(dir, BackupName("node1", time.Now()))
	res, err := applyIn(t, ns, p, ApplyOptions{Backup: backup})
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("apply onto a full file system: %v, want no space left and nothing written", err)
	}
	if res != nil {
		t.Errorf("a failed backup gave a result %+v: it would read as a write", res)
	}
	if after := kernelRules(t, ns); after != before {
		t.Error("the kernel changed although the backup failed")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left in the backup directory: %s", e.Name())
	}
}

// Of two applies at once, the second refuses, naming the first's pid, and
// writes nothing; the first writes.
func TestApplyTwoAtOnce(t *testing.T) {
	ns, p := driftedNode(t, true)
	before := kernelRules(t, ns)
	lock := filepath.Join(t.TempDir(), "apply.lock")
	dir := t.TempDir()
	inBackup, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := applyIn(t, ns, p, ApplyOptions{Backup: filepath.Join(dir, "first.yaml"), LockFile: lock,
			Hook: func(stage string) {
				if stage == StageAfterBackup {
					close(inBackup)
					<-release
				}
			}})
		first <- err
	}()
	<-inBackup
	res, err := applyIn(t, ns, p, ApplyOptions{Backup: filepath.Join(dir, "second.yaml"), LockFile: lock})
	close(release)
	want := "another reconcile --apply is running (pid " + strconv.Itoa(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the second apply: %v, want %q", err, want)
	}
	if res != nil {
		t.Errorf("the refused apply gave a result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "second.yaml")); err == nil {
		t.Error("the refused apply wrote a backup")
	}
	if err := <-first; err != nil {
		t.Fatalf("the first apply: %v", err)
	}
	if after := kernelRules(t, ns); after == before || !strings.Contains(after, strings.TrimSuffix(droppedRule, "\n")) {
		t.Error("the first apply did not write")
	}
}

// kube-proxy is asked about again under the lock: a refusal then writes
// nothing, not even a backup.
func TestApplyRechecksKubeProxy(t *testing.T) {
	ns, p := driftedNode(t, true)
	before := kernelRules(t, ns)
	backup := filepath.Join(t.TempDir(), "b.yaml")
	asked := 0
	_, err := applyIn(t, ns, p, ApplyOptions{Backup: backup, CheckKubeProxy: func(context.Context) error {
		asked++
		return CheckKubeProxy("127.0.0.1:10249", kubeProxySynced(time.Now().Add(-time.Minute)), nil, time.Now())
	}})
	if err == nil || !strings.Contains(err.Error(), "synced its rules 1m0s ago") || asked != 1 {
		t.Fatalf("apply under a kube-proxy that synced a minute ago: %v (asked %d times)", err, asked)
	}
	if _, err := os.Stat(backup); err == nil {
		t.Error("the refused apply wrote a backup")
	}
	if kernelRules(t, ns) != before {
		t.Error("the refused apply wrote to the kernel")
	}
}

// --force is said, with who gave it, in the result and on the log.
func TestApplyForceIsSaid(t *testing.T) {
	ns, p := driftedNode(t, true)
	var log strings.Builder
	res, err := applyIn(t, ns, p, ApplyOptions{Backup: filepath.Join(t.TempDir(), "b.yaml"), Force: true, User: "alice", Log: &log,
		CheckKubeProxy: func(context.Context) error { t.Error("kube-proxy was asked about under --force"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	want := "--force given: kube-proxy's check was skipped by alice"
	if !strings.Contains(log.String(), want) || res == nil || !strings.Contains(strings.Join(res.Notes, "\n"), want) {
		t.Errorf("log %q, notes %q: want %q in both", log.String(), res.Notes, want)
	}
}
