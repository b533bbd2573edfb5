//go:build linux

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/test/lab"
)

// TestReconcileIPTables repairs a node's iptables rules with kube-proxy
// (v1.36, iptables mode) stopped, and holds the repair to kube-proxy's
// own: drift is empty and real traffic lands where it should after the
// write, kube-proxy's next full sync changes nothing, a stop in the middle
// of a write leaves the old state or the new one, rollback puts the old
// one back, and other components' rules are untouched byte for byte.
// It runs on both iptables backends: kube-proxy writes to the one its
// iptables tools use, and the repair must find and write that one.
func TestReconcileIPTables(t *testing.T) {
	t.Run("nf_tables", func(t *testing.T) { reconcileIPTables(t, "nf_tables") })
	t.Run("legacy", func(t *testing.T) {
		useLegacyIPTables(t)
		reconcileIPTables(t, "legacy")
	})
}

func reconcileIPTables(t *testing.T, backend string) {
	c := startMatrix(t, "iptables", "")
	if got := iptablesBackend(t, c.Lab); got != backend {
		t.Fatalf("kube-proxy wrote to the %s backend, want %s", got, backend)
	}
	waitDrift(t, c, "node1", nil)
	// Other components' rules in kube-proxy's tables: a CNI's chains and
	// a user's rule in INPUT, written while kube-proxy runs.
	if out, err := c.Exec("node1", "sh", "-c", strings.Join([]string{"set -e",
		"iptables -t filter -N CNI-FORWARD-TEST",
		"iptables -t filter -A CNI-FORWARD-TEST -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment \"cni test\" -j ACCEPT",
		"iptables -t filter -A FORWARD -j CNI-FORWARD-TEST",
		"iptables -t nat -N CNI-HOSTPORT-TEST",
		"iptables -t nat -A CNI-HOSTPORT-TEST -p tcp --dport 8081 -j DNAT --to-destination 10.244.1.99:80",
		"iptables -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-TEST",
		"iptables -I INPUT 1 -p tcp --dport 2222 -j ACCEPT",
	}, "\n")); err != nil {
		t.Fatalf("adding other components' rules: %v\n%s", err, out)
	}
	foreign := foreignRules(t, c)

	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	// Kernel edits: an endpoint gone from a Service's rules, a NodePort
	// rule deleted, a stale endpoint chain, a jump deleted; and an API
	// change kube-proxy did not see: a new Service without endpoints.
	removeEndpointFromRules(t, c, "default/web:http", "default/web/tcp/http", c.pods["web-1"].IP)
	edit(t, c, "iptables -t nat -S KUBE-NODEPORTS | grep 'default/web-np:http' | grep -v nfacct | sed 's/^-A/-D/' | xargs -L1 iptables -t nat",
		"iptables -t nat -N KUBE-SEP-STALESTALESTALE1",
		"iptables -t nat -A KUBE-SEP-STALESTALESTALE1 -p tcp -m tcp -j DNAT --to-destination 10.244.9.9:80",
		"iptables -D FORWARD -m comment --comment 'kubernetes forwarding rules' -j KUBE-FORWARD")
	c.Apply(t, `apiVersion: v1
kind: Service
metadata: {name: added, namespace: default}
spec:
  selector: {app: nothing}
  ports: [{name: http, port: 80, protocol: TCP}]
`)
	before, _ := c.drift(t, "node1")
	if len(before) == 0 {
		t.Fatal("drift finds nothing after the edits")
	}
	t.Logf("drift before: %q", before)

	out, code := c.svctrace(t, "node1", "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", "v1.36.3")
	t.Logf("dry run:\n%s", out)
	if code != 1 || !strings.Contains(out, "dry run: nothing written") || !strings.Contains(out, "IPv4 ("+backend+" backend)") {
		t.Fatalf("dry run: exit %d, want 1", code)
	}
	for _, want := range []string{"KUBE-SEP-STALESTALESTALE1", "default/added:http has no endpoints", "fixes MissingEndpoint default/web:http"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not show %q", want)
		}
	}
	if got := foreignRules(t, c); got != foreign {
		t.Fatalf("a dry run changed other rules:\n%s", got)
	}

	backup := filepath.Join(t.TempDir(), "first.yaml")
	out, code = c.svctrace(t, "node1", "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", "v1.36.3", "--apply", "--backup", backup)
	t.Logf("apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "read again: no drift") {
		t.Fatalf("apply: exit %d", code)
	}
	waitDrift(t, c, "node1", nil)
	if got := foreignRules(t, c); got != foreign {
		t.Errorf("the apply changed other components' rules:\nbefore:\n%s\nafter:\n%s", foreign, got)
	}
	repaired := kubeLayout(t, c)
	t.Run("traffic", func(t *testing.T) { checkTraffic(t, c) })

	t.Run("kube-proxy's first sync", func(t *testing.T) {
		if err := c.startProxy("node1"); err != nil {
			t.Fatal(err)
		}
		if got := kubeLayout(t, c); got != repaired {
			t.Errorf("kube-proxy's first full sync changed the repaired rules:\n%s", netnstest.LineDiff(repaired, got))
		}
		// A repair under a running kube-proxy is refused, and says which.
		removeEndpointFromRules(t, c, "default/web:http", "default/web/tcp/http", c.pods["web-2"].IP)
		out, code := c.svctrace(t, "node1", "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", "v1.36.3", "--apply", "--backup", filepath.Join(t.TempDir(), "refused.yaml"))
		if code != 2 || !strings.Contains(out, "kube-proxy v1.36") || !strings.Contains(out, "synced its rules") || !strings.Contains(out, "--force") ||
			!strings.Contains(out, "apply refused: nothing written") || strings.Contains(out, "dry run") {
			t.Errorf("apply under a running kube-proxy: exit %d:\n%s", code, out)
		}
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stopped mid-apply", func(t *testing.T) {
		stoppedMidApply(t, c, func() string { return kubeLayout(t, c) }, repaired)
		if got := foreignRules(t, c); got != foreign {
			t.Errorf("rollback changed other components' rules:\n%s", got)
		}
	})
}

// stoppedMidApply stops svctrace in an apply of the repair the kernel
// needs again: after the backup, the kernel (as state reads it) is as it
// was; during the write, it is as it was or as repaired, never a mix; and
// rollback of that apply's backup puts the old state back.
func stoppedMidApply(t *testing.T, c *cluster, state func() string, repaired string) {
	t.Helper()
	old := state()
	if old == repaired {
		t.Fatal("nothing to repair")
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "after-backup.yaml")
	stopped(t, c, "after-backup", first)
	if got := state(); got != old {
		t.Errorf("stopped after the backup, the kernel changed:\n%s", netnstest.LineDiff(old, got))
	}
	if _, err := os.Stat(first); err != nil {
		t.Errorf("no backup: %v", err)
	}
	second := filepath.Join(dir, "during-write.yaml")
	stopped(t, c, "during-write", second)
	// The write, started before the stop, finishes by itself.
	var got string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got = state()
		if got == repaired || time.Now().After(deadline) {
			break
		}
	}
	if got != repaired && got != old {
		t.Fatalf("stopped during the write, the kernel holds a mix:\n%s", netnstest.LineDiff(repaired, got))
	}
	out, err := c.Exec("node1", c.bin, "reconcile", "rollback", "--local", "--node", "node1", second)
	if err != nil {
		t.Fatalf("rollback: %v:\n%s", err, out)
	}
	t.Logf("rollback:\n%s", out)
	if got := state(); got != old {
		t.Errorf("rollback did not put the old state back:\n%s", netnstest.LineDiff(old, got))
	}
}

// stopped runs an apply that svctrace stops itself at a stage.
func stopped(t *testing.T, c *cluster, stage, backup string) {
	t.Helper()
	ns, err := c.NetNS("node1")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, c.bin, "reconcile", "rules", "--local", "--node", "node1", "--kube-proxy-version", c.version, "--apply", "--backup", backup, "--kubeconfig", c.Kubeconfig)
	cmd.Env = append(os.Environ(), "SVCTRACE_RECONCILE_STOP_AT="+stage)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stopping here") {
		t.Fatalf("apply stopped at %s: %v\n%s", stage, err, out)
	}
}

// edit runs shell commands on node1.
func edit(t *testing.T, c *cluster, cmds ...string) {
	t.Helper()
	if out, err := c.Exec("node1", "sh", "-c", "set -e\n"+strings.Join(cmds, "\n")); err != nil {
		t.Fatalf("editing iptables: %v\n%s", err, out)
	}
}

// kubeLayout is kube-proxy's part of node1's IPv4 rules (its chains and
// their rules, its jumps from the built-in chains), normalised for what
// kube-proxy does not keep: counters, and the order of the rules of the
// chains every Service shares (and of its jumps).
func kubeLayout(t *testing.T, c *cluster) string {
	t.Helper()
	text, err := c.Exec("node1", "iptables-save")
	if err != nil {
		t.Fatal(err)
	}
	unordered := map[string]bool{"KUBE-SERVICES": true, "KUBE-EXTERNAL-SERVICES": true, "KUBE-NODEPORTS": true,
		"KUBE-PROXY-FIREWALL": true, "PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}
	chains := map[string][]string{}
	table := ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":KUBE-"):
			name, _, _ := strings.Cut(line[1:], " ")
			chains[table+" "+name] = append(chains[table+" "+name], "")
		case strings.HasPrefix(line, "-A "):
			chain, _, _ := strings.Cut(line[3:], " ")
			if strings.HasPrefix(chain, "KUBE-") || strings.Contains(line, " -j KUBE-") {
				chains[table+" "+chain] = append(chains[table+" "+chain], line)
			}
		}
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(chains)) {
		rules := chains[key]
		_, chain, _ := strings.Cut(key, " ")
		if unordered[chain] {
			// The NodePort dispatch stays last: it must.
			slices.SortStableFunc(rules, func(a, b string) int {
				ta, tb := strings.Contains(a, "nodeports; NOTE"), strings.Contains(b, "nodeports; NOTE")
				if ta != tb {
					if ta {
						return 1
					}
					return -1
				}
				return strings.Compare(a, b)
			})
		}
		out = append(out, "["+key+"]")
		out = append(out, rules...)
	}
	return strings.Join(out, "\n")
}

var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// foreignRules are node1's IPv4 rules that are not kube-proxy's, as
// iptables-save prints them, with counters.
func foreignRules(t *testing.T, c *cluster) string {
	t.Helper()
	text, err := c.Exec("node1", "iptables-save")
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || strings.Contains(line, "KUBE-") {
			continue
		}
		// A built-in chain's counters move with traffic; its rules do not.
		keep = append(keep, counters.ReplaceAllString(line, "[0:0]"))
	}
	return strings.Join(keep, "\n")
}

// TestReconcileLargeCluster holds the render to kube-proxy's large
// cluster mode: over 1,000 endpoints it leaves the comments off the rules
// of its per-Service chains, and svctrace must too.
func TestReconcileLargeCluster(t *testing.T) {
	l := lab.Start(t, lab.Options{Nodes: 1})
	if err := l.StartKubeProxy("node1", "iptables"); err != nil {
		t.Fatal(err)
	}
	objs, err := makeBenchObjects(120, 10)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, batch := range [][]lab.Create{objs.Namespaces, objs.Services, objs.Slices} {
		if err := l.CreateAll(ctx, 8, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.WaitSynced("node1"); err != nil {
		t.Fatal(err)
	}
	nat, err := l.Exec("node1", "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^-A KUBE-SEP-\S+ -p tcp -m tcp -j DNAT`).MatchString(nat) {
		t.Fatalf("kube-proxy is not in large cluster mode:\n%s", headLines(nat, 40))
	}
	ns, err := l.NetNS("node1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, buildSvctrace(t), "reconcile", "rules", "--local", "--node", "node1",
		"--kubeconfig", l.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "IPv4 (nf_tables backend): 0 changes") {
		t.Fatalf("reconcile rules on kube-proxy's large cluster rules: %v\n%s", err, headLines(string(out), 60))
	}
}

// headLines is the first n lines of s.
func headLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)\n", len(lines)-n))
	}
	return strings.Join(lines, "")
}
