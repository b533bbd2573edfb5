//go:build benchnode && linux

package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// benchAgentAddr is where the agent serves /metrics in node1's namespace: deploy/agent.yaml's
// port, on the node's every address as there.
const benchAgentAddr = "127.0.0.1:9859"

// benchAgentArgs are deploy/agent.yaml's arguments to the agent (everything else at its
// defaults, as there), and benchAgentMemLimit its GOMEMLIMIT (the container's memory limit).
var benchAgentArgs = []string{"--listen-address=:9859", "--api-address=:9860"}

const benchAgentMemLimit = "1073741824" // 1Gi

// measureAgentAtRest runs the agent on node1, waits for its first check, measures it over
// the idle window beside kube-proxy, then deletes a rule of Service middle (NS/NAME) and times
// until the agent shows drift. kube-proxy must be idle and every Service programmed.
func measureAgentAtRest(t *testing.T, l *lab.Lab, bin string, r *benchRun, window time.Duration, middle string) {
	t.Helper()
	ns, err := l.NetNS("node1")
	if err != nil {
		t.Fatal(err)
	}
	proxyPID, err := labKubeProxyPID(ns)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentAtRest{Args: strings.Join(benchAgentArgs, " "), Window: window}
	r.Agent = a
	argv := append([]string{"env", "GOMEMLIMIT=" + benchAgentMemLimit, bin, "agent", "--node", "node1", "--kubeconfig", l.Kubeconfig}, benchAgentArgs...)
	start := time.Now()
	cmd, logPath := startProcess(t, ns, "agent", 20*time.Second, true, argv...) // env and ip netns exec exec: the PID is the agent's
	agent := &agentProc{client: netnsClient(ns), addr: benchAgentAddr, cmd: cmd}
	pid := cmd.Process.Pid
	m := agent.waitMetrics(t, 10*time.Minute, "its first check done", func(m string) bool {
		return sumOf(m, "svctrace_checks_total") >= 1
	})
	a.FirstCheck = time.Since(start)
	if sumOf(m, "svctrace_last_check_success") != 1 || sumOf(m, "svctrace_drift_findings") != 0 {
		t.Fatalf("the agent's first check on the healthy node failed or found drift:\n%s", grepSvctrace(m))
	}
	t.Logf("agent (pid %d): first check after %v, %v frontends; kube-proxy pid %d", pid, a.FirstCheck.Round(time.Millisecond),
		sumOf(m, "svctrace_frontends_checked"), proxyPID)

	// The idle window.
	checks0, reads0 := sumOf(m, "svctrace_checks_total"), fullReads(logPath)
	cpu0, proxy0 := mustProcCPU(t, pid), mustProcCPU(t, proxyPID)
	windowStart := time.Now()
	var sum, n int64
	for time.Since(windowStart) < window {
		time.Sleep(min(time.Second, window-time.Since(windowStart)))
		rss, _ := mustProcMem(t, pid)
		sum, n = sum+rss, n+1
		a.RSSMaxKiB = max(a.RSSMaxKiB, rss)
	}
	cpu1, proxy1 := mustProcCPU(t, pid), mustProcCPU(t, proxyPID)
	a.Window = time.Since(windowStart)
	_, a.HWMKiB = mustProcMem(t, pid)
	a.CPU, a.ProxyCPU = cpu1-cpu0, proxy1-proxy0
	if n > 0 {
		a.RSSMeanKiB = sum / n
	}
	m = agent.waitMetrics(t, 10*time.Second, "scraped", func(string) bool { return true })
	a.Checks = int(sumOf(m, "svctrace_checks_total") - checks0)
	a.FullReads = fullReads(logPath) - reads0
	t.Logf("agent at rest over %v: CPU %v (%s of a core), %d checks (%d full reads); RSS mean %d KiB, max %d KiB, HWM %d KiB; kube-proxy CPU %v",
		a.Window.Round(time.Millisecond), a.CPU, formatShare(a.cpuShare()), a.Checks, a.FullReads, a.RSSMeanKiB, a.RSSMaxKiB, a.HWMKiB, a.ProxyCPU)
	if sumOf(m, "svctrace_drift_findings") != 0 {
		t.Errorf("drift on the idle node:\n%s", grepSvctrace(m))
	}

	// A kernel change, kube-proxy idle: it must not sync (and repair) meanwhile.
	syncs0, err := kubeProxySyncs(l)
	if err != nil {
		t.Fatal(err)
	}
	edit, err := deleteServiceRule(l, r, middle)
	if err != nil {
		t.Fatal(err)
	}
	a.Edit, a.EditTook = edit.what, edit.took
	edited := edit.end
	deadline := edited.Add(2 * time.Minute)
	for {
		code, body := agent.get(t, "/metrics")
		if code == 200 && sumOf(body, "svctrace_drift_findings") > 0 {
			a.Seen = time.Since(edited)
			started := time.Unix(0, int64(sumOf(body, "svctrace_last_check_timestamp_seconds")*1e9))
			a.Noticed = started.Sub(edited)
			a.CheckTook = time.Duration(sumOf(body, "svctrace_last_check_duration_seconds") * float64(time.Second))
			a.Findings = driftFindings(body)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no drift in the agent's metrics 2 minutes after %s:\n%s", edit.what, grepSvctrace(body))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if syncs1, err := kubeProxySyncs(l); err != nil || syncs1 != syncs0 {
		t.Errorf("kube-proxy synced during the change's measurement (%v syncs before, %v after, %v): the time is not the agent's alone", syncs0, syncs1, err)
	}
	t.Logf("%s (%v): drift seen after %v (check started %v after, took %v): %s", edit.what, edit.took.Round(time.Millisecond),
		a.Seen.Round(time.Millisecond), a.Noticed.Round(time.Millisecond), a.CheckTook.Round(time.Millisecond), a.Findings)
}

func mustProcCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	d, err := procCPU(string(b))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return d
}

func mustProcMem(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	rss, hwm, err = procMemKiB(string(b))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return rss, hwm
}

// labKubeProxyPID finds the kube-proxy the lab started in namespace ns: the lab starts it with
// ip netns exec, which execs it, as a child of this test process; it is the one child of this
// process in that namespace whose program is kube-proxy.
func labKubeProxyPID(ns string) (int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", ns), &want); err != nil {
		return 0, fmt.Errorf("finding kube-proxy: namespace %s: %w", ns, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("finding kube-proxy: %w", err)
	}
	self := os.Getpid()
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone
		}
		comm, rest, ok := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if !ok || !strings.HasSuffix(comm, "(kube-proxy") || len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			continue
		}
		found = append(found, pid)
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("finding kube-proxy: %d processes of this test named kube-proxy in %s (%v), want 1", len(found), ns, found)
	}
	return found[0], nil
}

// kubeProxySyncs is how many syncs node1's kube-proxy has made (IPv4).
func kubeProxySyncs(l *lab.Lab) (float64, error) {
	text, err := l.KubeProxyMetrics("node1")
	if err != nil {
		return 0, fmt.Errorf("kube-proxy's metrics: %w", err)
	}
	v := lab.MetricValue(text, "kubeproxy_sync_proxy_rules_duration_seconds_count", "ip_family=IPv4")
	if math.IsNaN(v) {
		v = lab.MetricValue(text, "kubeproxy_sync_proxy_rules_duration_seconds_count")
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("kube-proxy's metrics have no sync count")
	}
	return v, nil
}

type kernelEdit struct {
	what string
	took time.Duration
	end  time.Time
}

// deleteServiceRule deletes, in node1's kernel, the rule of Service svc (NS/NAME, port "http")
// that sends its packets to its endpoints: in iptables mode the first endpoint's rule of its
// KUBE-SVC chain, in nftables mode the numgen rule of its service chain.
func deleteServiceRule(l *lab.Lab, r *benchRun, svc string) (kernelEdit, error) {
	if r.Mode == "nftables" {
		return deleteServiceRuleNFT(l, svc)
	}
	tool := "iptables-legacy"
	if r.Backend == "nf_tables" {
		tool = "iptables-nft"
	}
	nat, err := l.Exec("node1", tool+"-save", "-t", "nat")
	if err != nil {
		return kernelEdit{}, fmt.Errorf("%s-save: %w", tool, err)
	}
	// The Service's chain from its cluster IP's rule: kube-proxy leaves the comments out of
	// the endpoints' rules on a node of more than 1,000 endpoints.
	c := regexp.MustCompile(`(?m)^-A KUBE-SERVICES .*--comment "` + regexp.QuoteMeta(svc+":http cluster IP") + `".* -j (KUBE-SVC-\S+)$`).FindStringSubmatch(nat)
	if c == nil {
		return kernelEdit{}, fmt.Errorf("no cluster IP rule of %s:http in %s-save's nat table", svc, tool)
	}
	m := regexp.MustCompile(`(?m)^-A (` + regexp.QuoteMeta(c[1]) + `) (.* -j KUBE-SEP-\S+)$`).FindStringSubmatch(nat)
	if m == nil {
		return kernelEdit{}, fmt.Errorf("no endpoint rule in %s's chain %s", svc, c[1])
	}
	start := time.Now()
	if out, err := l.Exec("node1", "sh", "-c", tool+" -t nat -D "+m[1]+" "+m[2]); err != nil {
		return kernelEdit{}, fmt.Errorf("deleting a rule of %s: %w\n%s", svc, err, out)
	}
	return kernelEdit{what: fmt.Sprintf("`%s -t nat -D %s` of the rule to its first endpoint", tool, m[1]), took: time.Since(start), end: time.Now()}, nil
}

func deleteServiceRuleNFT(l *lab.Lab, svc string) (kernelEdit, error) {
	chains, err := l.Exec("node1", "nft", "list", "chains", "ip")
	if err != nil {
		return kernelEdit{}, fmt.Errorf("listing kube-proxy's chains: %w", err)
	}
	m := regexp.MustCompile(`chain (service-\S+-` + regexp.QuoteMeta(svc) + `/tcp/http) `).FindStringSubmatch(chains)
	if m == nil {
		return kernelEdit{}, fmt.Errorf("no service chain of %s/tcp/http in kube-proxy's table", svc)
	}
	rules, err := l.Exec("node1", "nft", "-a", "list", "chain", "ip", "kube-proxy", m[1])
	if err != nil {
		return kernelEdit{}, fmt.Errorf("listing chain %s: %w", m[1], err)
	}
	h := regexp.MustCompile(`(?m)numgen .*# handle (\d+)$`).FindStringSubmatch(rules)
	if h == nil {
		return kernelEdit{}, fmt.Errorf("no numgen rule in chain %s:\n%s", m[1], rules)
	}
	start := time.Now()
	if out, err := l.Exec("node1", "nft", "delete", "rule", "ip", "kube-proxy", m[1], "handle", h[1]); err != nil {
		return kernelEdit{}, fmt.Errorf("deleting the numgen rule of %s: %w\n%s", m[1], err, out)
	}
	return kernelEdit{what: fmt.Sprintf("`nft delete rule` of the numgen rule (its endpoints) in chain %s", m[1]), took: time.Since(start), end: time.Now()}, nil
}

// fullReads counts the checks that read the node in full in the agent's log so far: each logs
// "checked" (a check that confirms the last one logs nothing at the default level).
func fullReads(logPath string) int {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), " msg=checked ")
}
