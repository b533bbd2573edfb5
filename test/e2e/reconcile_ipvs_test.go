//go:build linux

package e2e

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/test/lab"
)

// TestReconcileIPVS repairs a VM node whose kube-proxy (v1.36, ipvs mode)
// is stopped, after kernel edits to each part of ipvs mode (IPVS table,
// ipsets, kube-ipvs0, iptables rules) and API changes it did not see:
// drift is then empty and real traffic lands on the backends trace
// predicts; kube-proxy's first full sync changes nothing; an apply under
// the running kube-proxy is refused; a stop in the middle of an apply
// leaves the old state or the new one, and rollback puts the old one
// back; another component's rules and ipset are untouched.
func TestReconcileIPVS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	l, vm := startIPVSNode(ctx, t)
	sh := vmShell{ctx: ctx, t: t, vm: vm}
	run, svctrace := sh.run, sh.svctrace
	rules := "reconcile rules --local --node vm1 --kube-proxy-version v1.36.3"
	state := func() string { return ipvsState(t, run) }
	foreign := func() string { return ipvsForeign(run) }

	if out, code := svctrace(rules); code != 0 || !strings.Contains(out, "IPv4 (legacy backend): 0 changes") {
		t.Fatalf("the node as kube-proxy left it: exit %d:\n%s", code, out)
	}
	// Another component's rules and ipset beside kube-proxy's.
	run("iptables -N CNI-FORWARD-TEST && iptables -A CNI-FORWARD-TEST -s 10.244.0.0/16 -j ACCEPT && iptables -A FORWARD -j CNI-FORWARD-TEST && " +
		"iptables -I INPUT 1 -s 192.0.2.222/32 -m comment --comment user-rule -j ACCEPT && ipset create OTHER-TEST hash:ip && ipset add OTHER-TEST 192.0.2.77")
	others := foreign()

	if err := vm.StopKubeProxy(ctx); err != nil {
		t.Fatal(err)
	}
	run("ipvsadm -d -t 10.96.50.10:80 -r 10.244.1.11:8080 && ipvsadm -d -t 10.96.50.30:80 -r 10.244.200.12:8080 && " +
		"ipvsadm -E -t 10.96.50.12:80 -s wrr && ipvsadm -A -t 10.96.50.98:80 -s rr && ipvsadm -a -t 10.96.50.98:80 -r 10.244.1.99:80 -m && " +
		"ipset del KUBE-CLUSTER-IP 10.96.50.17,tcp:80 && ipset add KUBE-NODE-PORT-TCP 31999 && " +
		"ip addr del 10.96.50.13/32 dev kube-ipvs0 && ip addr add 10.96.50.99/32 dev kube-ipvs0 && " +
		"iptables -t nat -D KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT && " +
		"iptables -D INPUT -m comment --comment 'kubernetes ipvs access filter' -j KUBE-IPVS-FILTER")
	if _, err := l.Kubectl(ctx, "create", "service", "clusterip", "added", "--tcp=80:8080", "--clusterip=10.96.50.21"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "delete", "service", "sticky"); err != nil {
		t.Fatal(err)
	}
	out, code := svctrace(rules)
	t.Logf("dry run:\n%s", out)
	if code != 1 || !strings.Contains(out, "dry run: nothing written") {
		t.Fatalf("dry run: exit %d, want 1", code)
	}
	for _, want := range []string{
		"edit ipvs TCP 10.96.50.10:80  (default/web:http)", "+ -> 10.244.1.11:8080 Masq 1", "fixes MissingEndpoint default/web:http",
		"delete ipvs TCP 10.96.50.98:80", "delete ipvs TCP 10.96.50.11:80", "create ipvs TCP 10.96.50.21:80  (default/added:80-8080)",
		"+ 10.96.50.17,tcp:80", "- 31999", "+ 10.96.50.21/32", "- 10.96.50.99/32", "+ 10.96.50.13/32", "- 10.96.50.11,tcp:80",
		"rewrite nat KUBE-SERVICES", "edit filter INPUT",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not show %q", want)
		}
	}

	out, code = svctrace(rules + " --apply --backup /tmp/first.yaml")
	t.Logf("apply:\n%s", out)
	if code != 0 || !strings.Contains(out, "read again: no drift") {
		t.Fatalf("apply: exit %d", code)
	}
	if out, code := svctrace(rules); code != 0 {
		t.Errorf("after the apply: exit %d:\n%s", code, out)
	}
	if got := foreign(); got != others {
		t.Errorf("the apply changed other components' rules:\nbefore:\n%s\nafter:\n%s", others, got)
	}
	repaired := state()
	t.Run("traffic", func(t *testing.T) { vmTrafficCheck(ctx, t, vm) })

	t.Run("kube-proxy's first sync", func(t *testing.T) {
		if err := vm.StartKubeProxy(ctx, "ipvs"); err != nil {
			t.Fatal(err)
		}
		if got := state(); got != repaired {
			t.Errorf("kube-proxy's first full sync changed the repaired state:\n%s", netnstest.LineDiff(repaired, got))
		}
		// A repair under a running kube-proxy is refused, and says which.
		run("ipvsadm -d -t 10.96.50.10:80 -r 10.244.1.10:8080")
		out, code := svctrace(rules + " --apply --backup /tmp/refused.yaml")
		if code != 2 || !strings.Contains(out, "kube-proxy v1.36") || !strings.Contains(out, "synced its rules") || !strings.Contains(out, "--force") {
			t.Errorf("apply under a running kube-proxy: exit %d:\n%s", code, out)
		}
		if err := vm.StopKubeProxy(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stopped mid-apply", func(t *testing.T) {
		old := state()
		if old == repaired {
			t.Fatal("nothing to repair")
		}
		for _, stage := range []string{"after-backup", "during-write"} {
			out, _ := svctrace(rules+" --apply --backup /tmp/"+stage+".yaml", "SVCTRACE_RECONCILE_STOP_AT="+stage)
			if !strings.Contains(out, "stopping here") {
				t.Fatalf("apply stopped at %s:\n%s", stage, out)
			}
			if !strings.Contains(run("ls /tmp/"+stage+".yaml"), stage) {
				t.Errorf("no backup of the apply stopped at %s", stage)
			}
		}
		// Stopped after the backup, nothing was written; stopped during
		// the write, the write finishes by itself.
		got := state()
		for deadline := time.Now().Add(20 * time.Second); got != repaired && time.Now().Before(deadline); got = state() {
			time.Sleep(300 * time.Millisecond)
		}
		if got != repaired {
			t.Errorf("stopped during the write, the kernel is not as repaired:\n%s", netnstest.LineDiff(repaired, got))
		}
		out, code := svctrace("reconcile rollback /tmp/during-write.yaml")
		t.Logf("rollback:\n%s", out)
		if code != 0 {
			t.Fatalf("rollback: exit %d", code)
		}
		if got := state(); got != old {
			t.Errorf("rollback did not put the old state back:\n%s", netnstest.LineDiff(old, got))
		}
		if got := foreign(); got != others {
			t.Errorf("rollback changed other components' rules:\n%s", got)
		}
	})
}

// ipvsChains are the iptables chains of kube-proxy's ipvs mode.
var ipvsChains = regexp.MustCompile(`^(:|-A )(KUBE-SERVICES|KUBE-POSTROUTING|KUBE-NODE-PORT|KUBE-LOAD-BALANCER|KUBE-MARK-MASQ|KUBE-FORWARD|KUBE-PROXY-FIREWALL|KUBE-SOURCE-RANGES-FIREWALL|KUBE-IPVS-FILTER|KUBE-IPVS-OUT-FILTER) `)

// ipvsJump is one of kube-proxy's jumps into its ipvs mode's chains.
var ipvsJump = regexp.MustCompile(` -j (KUBE-SERVICES|KUBE-POSTROUTING|KUBE-FORWARD|KUBE-NODE-PORT|KUBE-PROXY-FIREWALL|KUBE-IPVS-FILTER|KUBE-IPVS-OUT-FILTER)$`)

// startIPVSNode starts the lab's VM node with the pods' bridge (its
// address is one more the NodePorts open on, for kube-proxy and the
// repair alike) and kube-proxy in ipvs mode.
func startIPVSNode(ctx context.Context, t *testing.T) (*lab.Lab, *lab.VM) {
	t.Helper()
	l, vm := startIPVSVM(ctx, t)
	vmPodNet(ctx, t, vm)
	if err := vm.StartKubeProxy(ctx, "ipvs"); err != nil {
		t.Fatal(err)
	}
	return l, vm
}

// vmShell runs commands in the lab's VM node for a test.
type vmShell struct {
	ctx context.Context
	t   *testing.T
	vm  *lab.VM
}

// run runs a shell command in the VM; a failure fails the test.
func (v vmShell) run(cmd string) string {
	v.t.Helper()
	out, err := v.vm.Run(v.ctx, cmd)
	if err != nil {
		v.t.Fatal(err)
	}
	return out
}

// svctrace runs kubectl-svctrace in the VM, with env before it, and
// returns its output and exit code.
func (v vmShell) svctrace(args string, env ...string) (string, int) {
	v.t.Helper()
	out := v.run(strings.Join(env, " ") + " kubectl-svctrace " + args + " --kubeconfig " + lab.VMAdminKubeconfig + " 2>&1; echo exit=$?")
	i := strings.LastIndex(out, "exit=")
	if i < 0 {
		return out, -1
	}
	return out[:i], int(out[i+5] - '0')
}

// ipvsState is kube-proxy's part of the VM's state in ipvs mode,
// normalised for what kube-proxy does not keep: the virtual servers, the
// ipset members, kube-ipvs0's addresses in any order (with the random
// hash seed of a set left out), its chains' rules in order but for the
// node's load-balancer drops, its jumps in any order, and no counters.
func ipvsState(t *testing.T, run func(string) string) string {
	t.Helper()
	var b strings.Builder
	sorted := func(text string, keep func(string) bool) {
		var lines []string
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" && keep(l) {
				lines = append(lines, l)
			}
		}
		slices.Sort(lines)
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	all := func(string) bool { return true }
	b.WriteString("# ipvsadm -Sn\n")
	sorted(run("ipvsadm -Sn"), all)
	b.WriteString("# ipset save\n")
	seed := regexp.MustCompile(` (bucketsize|initval) \S+`)
	// kube-proxy's IPv6 proxier in the VM (a node without IPv6 Services)
	// fails its syncs partway, having made a different few of its sets
	// each time it starts: they are left out.
	sorted(seed.ReplaceAllString(run("ipset save"), ""), func(l string) bool {
		return !strings.Contains(l, "OTHER-TEST") && !strings.Contains(l, " KUBE-6-")
	})
	b.WriteString("# kube-ipvs0\n")
	sorted(run("ip -o addr show dev kube-ipvs0 | awk '{print $4}'"), all)
	b.WriteString("# iptables-save\n")
	var jumps, drops []string
	for _, l := range strings.Split(run("iptables-save"), "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			b.WriteString(l + "\n")
		case ipvsChains.MatchString(l) && strings.HasPrefix(l, ":"):
			b.WriteString(strings.Fields(l)[0] + "\n")
		case strings.HasPrefix(l, "-A KUBE-IPVS-OUT-FILTER "):
			drops = append(drops, l)
		case ipvsChains.MatchString(l):
			b.WriteString(l + "\n")
		case strings.HasPrefix(l, "-A ") && ipvsJump.MatchString(l):
			jumps = append(jumps, l)
		}
	}
	slices.Sort(jumps)
	slices.Sort(drops)
	b.WriteString(strings.Join(append(jumps, drops...), "\n") + "\n")
	return b.String()
}

// ipvsForeign is what of the VM's iptables rules and ipsets is not
// kube-proxy's, counters left out.
func ipvsForeign(run func(string) string) string {
	var keep []string
	for _, l := range strings.Split(run("iptables-save"), "\n") {
		if strings.HasPrefix(l, "#") || strings.Contains(l, "KUBE-") {
			continue
		}
		keep = append(keep, counters.ReplaceAllString(l, "[0:0]"))
	}
	return strings.Join(keep, "\n") + "\n" + run("ipset list OTHER-TEST")
}
