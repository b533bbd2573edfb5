//go:build linux

package ipvs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/model"
)

// bigTarget is the render of many ClusterIP Services, without virtual
// servers (the host's kernel has no IPVS): ipsets, addresses on
// kube-ipvs0 and rules enough that a write takes a while.
func bigTarget(n int) *Target {
	v := &model.NodeView{Node: "n1", Family: "IPv4", NodeIPs: []string{"192.0.2.10"}}
	for i := range n {
		ep := model.Endpoint{IP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), Port: 8080, Ready: true, Serving: true, NodeName: "n2"}
		v.Ports = append(v.Ports, model.ServicePort{Namespace: "default", Name: fmt.Sprintf("s%d", i), PortName: "http", Protocol: "TCP", Port: 80,
			ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Endpoints: []model.Endpoint{ep}, ClusterEndpoints: []model.Endpoint{ep}})
	}
	t := Render(v, RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14, RandomFully: true,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	t.Virtuals = nil
	return t
}

// TestWriterKilled: the writing process, killed once it has begun (as
// the OOM killer takes it with the agent's cgroup), leaves its journal;
// the next apply refuses before its backup and before writing, pointing
// to the rollback; the rollback puts the namespace back as the backup
// holds it and clears the journal; then an apply writes, and a write
// that ends leaves no journal. Real kernel, in a namespace of the test's.
func TestWriterKilled(t *testing.T) {
	ns := netnstest.New(t, "ipvsj", "ipset", "iptables-nft-restore", "iptables-nft-save")
	netnstest.Run(t, ns, "", "ip", "link", "add", Dummy, "type", "bridge")
	ctx := context.Background()
	l := Loader{StateDir: t.TempDir()}
	journal := journalPath(l.StateDir, "IPv4")
	plan := &dataplane.RepairPlan{Family: "IPv4", Backend: "nf_tables", Target: &repairTarget{target: bigTarget(1500), backend: "nf_tables"}}
	in := func(fn func() error) error { return netns.Run("/run/netns/"+ns, fn) }
	state := func() string {
		t.Helper()
		out := netnstest.Run(t, ns, "", "ipset", "save") + netnstest.Run(t, ns, "", "ip", "-o", "addr", "show", "dev", Dummy) +
			netnstest.Run(t, ns, "", "iptables-nft-save", "-t", "nat") + netnstest.Run(t, ns, "", "iptables-nft-save", "-t", "filter")
		var lines []string
		for _, x := range strings.Split(out, "\n") {
			if !strings.HasPrefix(x, "#") {
				lines = append(lines, x)
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	var part dataplane.BackupPart
	if err := in(func() (err error) { part, err = l.Backup(ctx, plan); return err }); err != nil {
		t.Fatal(err)
	}
	before := state()

	killed := 0
	err := in(func() error {
		_, err := l.Write(ctx, plan, func() {
			// The writer records itself before its first change; it is
			// killed once it has made some (its first ipset).
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				// (This runs in the namespace, off the test's goroutine.)
				sets, _ := exec.Command("ipset", "list", "-n").Output()
				if e, _ := readJournal(journal); e != nil && e.Writer > 0 && strings.Contains(string(sets), "KUBE-") {
					killed = e.Writer
					_ = syscall.Kill(e.Writer, syscall.SIGKILL)
					return
				}
			}
		})
		return err
	})
	if killed == 0 || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("writer %d, error %v: want the killed writer's", killed, err)
	}
	if n := lineCount(state(), before); n == 0 {
		t.Fatal("the writer was killed before its first change")
	} else {
		t.Logf("killed halfway: %d lines of the namespace's state differ from the backup's", n)
	}
	e, jerr := readJournal(journal)
	if jerr != nil || e == nil || e.Finished || e.Writer != killed || e.Kind != journalApply {
		t.Fatalf("after the kill, the journal is %+v (%v)", e, jerr)
	}
	for name, do := range map[string]func() error{
		"backup": func() error { _, err := l.Backup(ctx, plan); return err },
		"write":  func() error { _, err := l.Write(ctx, plan, nil); return err },
	} {
		if err := in(do); err == nil || !strings.Contains(err.Error(), "did not finish") || !strings.Contains(err.Error(), "reconcile rollback") {
			t.Errorf("the next apply's %s: error %v, want a refusal", name, err)
		}
	}
	if err := in(func() error { _, err := l.Restore(ctx, part); return err }); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if after := state(); after != before {
		t.Errorf("after the rollback, the namespace differs from the backup's:\n%s", netnstest.LineDiff(before, after))
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("after the rollback, the journal is still there: %v", err)
	}
	if err := in(func() error { _, err := l.Write(ctx, plan, nil); return err }); err != nil {
		t.Fatalf("the apply after the rollback: %v", err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("after a write that ended, the journal is still there: %v", err)
	}
	if out := netnstest.Run(t, ns, "", "ipset", "list", "KUBE-CLUSTER-IP"); !strings.Contains(out, "10.96.5.250,tcp:80") {
		t.Errorf("the write lacks the last Service:\n%.500s", out)
	}
}

// lineCount is how many lines one text has that the other has not.
func lineCount(a, b string) int {
	n := 0
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for _, x := range al {
		if !slices.Contains(bl, x) {
			n++
		}
	}
	return n
}
