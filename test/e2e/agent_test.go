//go:build linux

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
)

// agentAddr is where the agent under test serves, inside node1.
const agentAddr = "127.0.0.1:9859"

// TestAgent runs the node agent on node1 of the lab (iptables mode, real
// kube-proxy) and reads what it exports, as Prometheus would:
//   - healthy, it is ready and shows no finding;
//   - a burst of ordinary Service and EndpointSlice changes, which
//     kube-proxy applies, never shows as drift, only as pending;
//   - with kube-proxy stopped, a rule deleted in the kernel is pending
//     until the grace period has passed (kube-proxy's metrics cannot be
//     read), then drift of that Service; restarting kube-proxy repairs
//     it, and the drift goes.
func TestAgent(t *testing.T) {
	c := startMatrix(t, "iptables", "")
	a := startAgent(t, c, "node1", "--interval", "2s", "--debounce", "100ms", "--min-gap", "300ms", "--grace-period", "12s", "--stall-after", "4s", "--endpoint-labels")

	m := a.waitMetrics(t, 60*time.Second, "ready and healthy", func(m string) bool {
		return sumOf(m, "svctrace_last_check_success") == 1 && sumOf(m, "svctrace_drift_findings") == 0 &&
			sumOf(m, "svctrace_pending_findings") == 0
	})
	if n := sumOf(m, "svctrace_frontends_checked"); n < 10 {
		t.Errorf("%v frontends checked", n)
	}
	for _, want := range []string{`svctrace_collector_success{collector="kube-proxy"} 1`, `svctrace_kube_proxy_info{iptables_backend=`,
		`mode="iptables"`, `svctrace_collector_success{collector="conntrack"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("no %s in:\n%s", want, grepSvctrace(m))
		}
	}
	if code, body := a.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// A hundred scrapes at once are all answered.
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 100 {
		wg.Go(func() {
			if code, body := a.get(t, "/metrics"); code != 200 || !strings.Contains(body, "svctrace_frontends_checked") {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of 100 concurrent scrapes failed", n)
	}

	t.Run("a burst of changes kube-proxy applies is no drift", func(t *testing.T) {
		// A kube-proxy that syncs at most every 3 s, as on a busy
		// node: the agent checks between its syncs and sees the
		// differences they have not applied yet.
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
		// Started through startSynced: a kube-proxy just started can
		// miss its zone label, which the check below would take for
		// drift.
		c.startSynced(t, "node1", []string{"--iptables-min-sync-period=3s"})
		stop := a.watchNoDrift(t)
		for i := range 6 {
			c.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: burst-%d, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`, i))
			time.Sleep(700 * time.Millisecond)
		}
		for i := range 6 {
			if err := c.Delete("Service", "default", fmt.Sprintf("burst-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.WaitSynced("node1"); err != nil {
			t.Fatal(err)
		}
		a.waitMetrics(t, 30*time.Second, "settled after the burst", func(m string) bool {
			return sumOf(m, "svctrace_pending_findings") == 0 && sumOf(m, "svctrace_drift_findings") == 0 &&
				sumOf(m, "svctrace_checks_total") > 0
		})
		if samples, pending := stop(); samples < 10 || pending == 0 {
			// The burst must have been seen: otherwise the test
			// proves nothing about lag.
			t.Errorf("%d scrapes during the burst, %d of them with pending findings", samples, pending)
		}
	})

	t.Run("the API server down", func(t *testing.T) {
		if err := c.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		before := sumOf(a.waitMetrics(t, 5*time.Second, "scraped", func(string) bool { return true }), "svctrace_checks_total")
		a.waitMetrics(t, 30*time.Second, "checking on without the API server", func(m string) bool {
			return sumOf(m, "svctrace_api_reachable") == 0 && sumOf(m, "svctrace_last_check_success") == 1 &&
				sumOf(m, "svctrace_checks_total") > before+1 && sumOf(m, "svctrace_drift_findings") == 0
		})
		if code, body := a.get(t, "/readyz"); code != 200 {
			t.Errorf("/readyz without the API server: %d %s", code, body)
		}
		if err := c.StartAPIServer(); err != nil {
			t.Fatal(err)
		}
		a.waitMetrics(t, 60*time.Second, "the API server back", func(m string) bool {
			return sumOf(m, "svctrace_api_reachable") == 1 && sumOf(m, "svctrace_drift_findings") == 0
		})
	})

	t.Run("a rule deleted with kube-proxy stopped", func(t *testing.T) {
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
		nat, err := c.Exec("node1", "iptables-save", "-t", "nat")
		if err != nil {
			t.Fatal(err)
		}
		web1 := c.pods["web-1"].IP
		mm := regexp.MustCompile(`(?m)^-A (KUBE-SVC-\S+) (.*--comment "default/web:http -> ` + regexp.QuoteMeta(web1) + `:8080".*)$`).FindStringSubmatch(nat)
		if mm == nil {
			t.Fatalf("no rule of default/web:http to %s", web1)
		}
		deleted := time.Now()
		if _, err := c.Exec("node1", "sh", "-c", "iptables -t nat -D "+mm[1]+" "+mm[2]); err != nil {
			t.Fatal(err)
		}
		a.waitMetrics(t, 10*time.Second, "the difference pending", func(m string) bool {
			return strings.Contains(m, `svctrace_pending_findings{finding="MissingEndpoint"} 1`) &&
				strings.Contains(m, `svctrace_collector_success{collector="kube-proxy"} 0`)
		})
		m := a.waitMetrics(t, 40*time.Second, "drift after the grace period", func(m string) bool {
			return strings.Contains(m, `svctrace_drift_findings{finding="MissingEndpoint"} 1`)
		})
		if d := time.Since(deleted); d < 12*time.Second {
			t.Errorf("drift reported %v after the change, before the grace period", d)
		}
		if !strings.Contains(m, `svctrace_service_drift_findings{finding="MissingEndpoint",namespace="default",service="web"} 1`) ||
			!strings.Contains(m, `svctrace_endpoint_drift_findings{endpoint="`+web1+`:8080",finding="MissingEndpoint",namespace="default",service="web"} 1`) {
			t.Errorf("the Service or its endpoint is not named:\n%s", grepSvctrace(m))
		}
		if err := c.startProxy("node1"); err != nil {
			t.Fatal(err)
		}
		c.relabelZones(t, "node1") // kube-proxy's zone race: see TestAgentNFTables
		a.waitMetrics(t, 30*time.Second, "repaired by kube-proxy", func(m string) bool {
			return sumOf(m, "svctrace_drift_findings") == 0 && sumOf(m, "svctrace_pending_findings") == 0 &&
				strings.Contains(m, `svctrace_collector_success{collector="kube-proxy"} 1`)
		})
	})

	t.Run("a kube-proxy that leaves a change waiting is stalled", func(t *testing.T) {
		// A kube-proxy that may sync only every 30 s: a change after
		// its sync waits, as behind a wedged kube-proxy.
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
		if err := c.StartKubeProxyVersion("node1", c.version, c.mode, "--iptables-min-sync-period=30s"); err != nil {
			t.Fatal(err)
		}
		c.Apply(t, `
apiVersion: v1
kind: Service
metadata: {name: waits, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`)
		m := a.waitMetrics(t, 20*time.Second, "stalled", func(m string) bool {
			return sumOf(m, "svctrace_kube_proxy_sync_stalled") == 1
		})
		if lag := sumOf(m, "svctrace_kube_proxy_sync_lag_seconds"); lag < 4 {
			t.Errorf("stalled with a lag of %v s", lag)
		}
		if err := c.Delete("Service", "default", "waits"); err != nil {
			t.Fatal(err)
		}
		if err := c.StopKubeProxy("node1"); err != nil {
			t.Fatal(err)
		}
		if err := c.startProxy("node1"); err != nil {
			t.Fatal(err)
		}
		c.relabelZones(t, "node1") // kube-proxy's zone race: see TestAgentNFTables
		a.waitMetrics(t, 30*time.Second, "syncing again", func(m string) bool {
			return sumOf(m, "svctrace_kube_proxy_sync_stalled") == 0 && sumOf(m, "svctrace_drift_findings") == 0 &&
				sumOf(m, "svctrace_pending_findings") == 0
		})
	})
}

// agentProc is an agent the test started in a node's namespace.
type agentProc struct {
	log    string
	cmd    *exec.Cmd
	client *http.Client
	addr   string
}

// netnsClient is an HTTP client whose connections start in the lab's
// network namespace ns.
func netnsClient(ns string) *http.Client {
	path := filepath.Join("/run/netns", ns)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := netns.Run(path, func() error {
				var err error
				conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		}}}
}

// startAgent starts the agent in node's namespace, stopped (by its PID)
// when the test ends; its log is shown if the test fails.
func startAgent(t *testing.T, c *cluster, node string, args ...string) *agentProc {
	t.Helper()
	ns, err := c.NetNS(node)
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{c.bin, "agent", "--node", node, "--kubeconfig", c.Kubeconfig, "--listen-address", agentAddr}, args...)
	cmd, log := startProcess(t, ns, "agent", 10*time.Second, true, argv...)
	return &agentProc{log: log, cmd: cmd, client: netnsClient(ns)}
}

// startProcess starts argv in the lab's network namespace ns, its output in
// a log file shown (its end) if the test fails, and stops it when the test
// ends: SIGINT by its PID (ip netns exec has exec'd it), SIGKILL after
// grace, which is an error of the test when mustQuit.
func startProcess(t *testing.T, ns, name string, grace time.Duration, mustQuit bool, argv ...string) (*exec.Cmd, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
			if mustQuit {
				t.Errorf("%s did not stop within %v of SIGINT", name, grace)
			}
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log:\n%s", name, tail(string(b), 60))
			}
		}
	})
	return cmd, logPath
}

// get fetches a path of the agent.
func (a *agentProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	addr := a.addr
	if addr == "" {
		addr = agentAddr
	}
	resp, err := a.client.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// waitMetrics scrapes until ok accepts the metrics, and returns them.
func (a *agentProc) waitMetrics(t *testing.T, timeout time.Duration, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		code, body := a.get(t, "/metrics")
		if code == 200 {
			last = body
			if ok(body) {
				return body
			}
		} else {
			last = fmt.Sprintf("HTTP %d: %s", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v; last scrape:\n%s", what, timeout, grepSvctrace(last))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// watchNoDrift scrapes every 200 ms until the returned function is called,
// which fails the test if any scrape showed drift (the scrapes that did,
// with the time they were made) and returns how many scrapes were made
// and how many showed pending findings. The scraping goroutine reports
// nothing itself: a scrape in flight when the test ends must not fail it
// after it has finished.
func (a *agentProc) watchNoDrift(t *testing.T) func() (int, int) {
	t.Helper()
	done := make(chan struct{})
	type result struct {
		samples, pending int
		drift            []string
	}
	res := make(chan result, 1)
	go func() {
		var r result
		for {
			select {
			case <-done:
				res <- r
				return
			case <-time.After(200 * time.Millisecond):
			}
			code, body := a.get(t, "/metrics")
			if code != 200 {
				continue
			}
			r.samples++
			if sumOf(body, "svctrace_pending_findings") > 0 {
				r.pending++
			}
			if n := sumOf(body, "svctrace_drift_findings"); n > 0 {
				r.drift = append(r.drift, time.Now().Format(time.RFC3339Nano)+"\n"+grepSvctrace(body))
			}
		}
	}()
	return func() (int, int) {
		t.Helper()
		close(done)
		r := <-res
		for _, d := range r.drift {
			t.Errorf("drift during changes kube-proxy applies, at %s", d)
		}
		return r.samples, r.pending
	}
}

// sumOf sums every series of a metric in Prometheus text (NaN-free: a
// metric not there sums to 0).
func sumOf(text, name string) float64 {
	var sum float64
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(rest), &v); err == nil {
			sum += v
		}
	}
	return sum
}

// grepSvctrace keeps the svctrace_ lines of a scrape, for messages.
func grepSvctrace(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "svctrace_") && !strings.HasSuffix(strings.TrimSpace(line), " 0") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
