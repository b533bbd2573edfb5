//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/test/lab"
)

// TestReconcileIPVSWriterOOM kills an apply in ipvs mode on the VM node
// as the OOM killer kills the agent's container: svctrace and its
// detached writer at once, once the writer has recorded itself in the
// write's journal (before its first change here, or during them: the
// kill lands where it lands; plugins/ipvs' TestWriterKilled kills one
// halfway for sure). The journal stays; the next apply refuses before
// writing anything and points to the rollback; the rollback puts the old
// state back and clears the journal; then an apply repairs the node.
func TestReconcileIPVSWriterOOM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	_, vm := startIPVSNode(ctx, t)
	sh := vmShell{ctx: ctx, t: t, vm: vm}
	run, svctrace := sh.run, sh.svctrace
	rules := "reconcile rules --local --node vm1 --kube-proxy-version v1.36.3"
	journal := "/var/lib/svctrace/ipvs-write-IPv4.json"
	if out, code := svctrace(rules); code != 0 {
		t.Fatalf("the node as kube-proxy left it: exit %d:\n%s", code, out)
	}
	if err := vm.StopKubeProxy(ctx); err != nil {
		t.Fatal(err)
	}
	run("ipvsadm -d -t 10.96.50.10:80 -r 10.244.1.11:8080 && ipvsadm -A -t 10.96.50.98:80 -s rr && ipvsadm -a -t 10.96.50.98:80 -r 10.244.1.99:80 -m && " +
		"ipset del KUBE-CLUSTER-IP 10.96.50.17,tcp:80 && ipset add KUBE-NODE-PORT-TCP 31999 && " +
		"ip addr del 10.96.50.13/32 dev kube-ipvs0 && ip addr add 10.96.50.99/32 dev kube-ipvs0 && " +
		"iptables -t nat -D KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT")
	old := ipvsState(t, run)

	// The apply in the background; once its writer has recorded itself
	// in the journal, both are killed at once.
	out := run("rm -f /tmp/oom.yaml; (exec kubectl-svctrace " + rules + " --apply --backup /tmp/oom.yaml --kubeconfig " + lab.VMAdminKubeconfig + " >/tmp/oom.log 2>&1) & app=$!; " +
		"w=; for i in $(seq 1 3000); do w=$(sed -n 's/.*\"writer\":\\([0-9]*\\).*/\\1/p' " + journal + " 2>/dev/null); [ -n \"$w\" ] && break; sleep 0.01; done; " +
		"kill -9 $app $w; wait $app; echo writer=$w; cat " + journal + "; echo; cat /tmp/oom.log")
	t.Logf("killed:\n%s", out)
	if !strings.Contains(out, `"kind":"apply"`) || strings.Contains(out, `"finished":true`) || strings.Contains(out, "writer=\n") {
		t.Fatalf("after the kill, no unfinished journal of the writer")
	}
	if got := ipvsState(t, run); got != old {
		t.Logf("killed halfway: the kernel differs from the old state:\n%s", netnstest.LineDiff(old, got))
	}

	out, code := svctrace(rules + " --apply --backup /tmp/next.yaml")
	t.Logf("the next apply:\n%s", out)
	if code == 0 || !strings.Contains(out, "did not finish") || !strings.Contains(out, "reconcile rollback") || !strings.Contains(out, "nothing written") {
		t.Errorf("the next apply: exit %d, want a refusal pointing to the rollback", code)
	}
	out, code = svctrace("reconcile rollback /tmp/oom.yaml")
	t.Logf("rollback:\n%s", out)
	if code != 0 {
		t.Fatalf("rollback: exit %d", code)
	}
	if got := ipvsState(t, run); got != old {
		t.Errorf("the rollback did not put the old state back:\n%s", netnstest.LineDiff(old, got))
	}
	if out := run("ls " + journal + " 2>&1; true"); !strings.Contains(out, "No such file") {
		t.Errorf("after the rollback, the journal is still there: %s", out)
	}
	out, code = svctrace(rules + " --apply --backup /tmp/last.yaml")
	if code != 0 || !strings.Contains(out, "read again: no drift") {
		t.Errorf("the apply after the rollback: exit %d:\n%s", code, out)
	}
}
