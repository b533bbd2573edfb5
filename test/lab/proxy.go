//go:build linux

package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StartKubeProxy runs the default kube-proxy version (Lab.ProxyVersion) on node in mode
// "iptables" or "nftables" ("ipvs" is accepted but this kernel has no IPVS). Flags:
// --kubeconfig, --hostname-override=<node>, --proxy-mode, --cluster-cidr 10.244.0.0/16,
// --conntrack-max-per-core=0, --metrics-bind-address 127.0.0.1:10249 and
// --healthz-bind-address 0.0.0.0:10256 (inside the node namespace), then extraArgs (later
// flags win). The log is Dir/kube-proxy-<node>.log.
func (l *Lab) StartKubeProxy(node, mode string, extraArgs ...string) error {
	return l.StartKubeProxyVersion(node, l.ProxyVersion, mode, extraArgs...)
}

// StartKubeProxyVersion is StartKubeProxy with an explicit kube-proxy version (built and
// cached by test/tools/build.sh; one control plane can serve several kube-proxy versions).
func (l *Lab) StartKubeProxyVersion(node, version, mode string, extraArgs ...string) error {
	n := l.Node(node)
	if n == nil {
		return fmt.Errorf("lab: no node %q", node)
	}
	dir, err := ensureBinaries(version, "kube-proxy")
	if err != nil {
		return err
	}
	l.mu.Lock()
	running := n.proxy != nil && !n.proxy.exited()
	l.mu.Unlock()
	if running {
		return fmt.Errorf("lab: kube-proxy already running on %s", node)
	}
	args := []string{filepath.Join(dir, "kube-proxy"),
		"--kubeconfig=" + l.ProxyKubeconfig,
		"--hostname-override=" + n.Name,
		"--proxy-mode=" + mode,
		"--cluster-cidr=" + ClusterCIDR,
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=" + metricsAddr,
		"--healthz-bind-address=0.0.0.0:10256",
	}
	args = append(args, extraArgs...)
	p, err := l.startProc("kube-proxy-"+n.Name, n.NetNS, args...)
	if err != nil {
		return err
	}
	l.mu.Lock()
	n.proxy = p
	n.proxyMinSync = minSyncPeriod(extraArgs)
	l.mu.Unlock()
	// Wait for the first full sync, so callers can inspect rules right away.
	if err := l.waitSynced(n, 90*time.Second); err != nil {
		return fmt.Errorf("kube-proxy %s on %s: %w", version, node, err)
	}
	return nil
}

// StopKubeProxy stops the node's kube-proxy (SIGTERM by PID, SIGKILL after 10 s) and waits for
// it. The rules it programmed stay, as on a real node.
func (l *Lab) StopKubeProxy(node string) error {
	n := l.Node(node)
	if n == nil {
		return fmt.Errorf("lab: no node %q", node)
	}
	l.mu.Lock()
	p := n.proxy
	n.proxy = nil
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.stop(10 * time.Second)
	l.removeProc(p)
	return err
}

// KubeProxyRunning reports whether a kube-proxy the lab started runs on the node.
func (l *Lab) KubeProxyRunning(node string) bool {
	n := l.Node(node)
	if n == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return n.proxy != nil && !n.proxy.exited()
}

// KubeProxyLog is the path of the node's kube-proxy log.
func (l *Lab) KubeProxyLog(node string) string {
	return filepath.Join(l.Dir, "kube-proxy-"+node+".log")
}

// KubeProxyMetrics fetches the node's kube-proxy /metrics (Prometheus text).
func (l *Lab) KubeProxyMetrics(node string) (string, error) {
	n := l.Node(node)
	if n == nil {
		return "", fmt.Errorf("lab: no node %q", node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.httpGetIn(ctx, n.NetNS, "http://"+metricsAddr+"/metrics")
}

// httpGetIn performs a GET from inside namespace ns.
func (l *Lab) httpGetIn(ctx context.Context, ns, url string) (string, error) {
	nsPath := filepath.Join(netnsDir, ns)
	c := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, nsPath, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return string(b), nil
}

// MetricValue returns the value of the first series of metric name in Prometheus text whose
// labels include every "key=value" in labels, or NaN.
// Example: MetricValue(text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds", "ip_family=IPv4").
func MetricValue(text, name string, labels ...string) float64 {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		var lbls string
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			lbls, rest = rest[1:end], rest[end+1:]
		}
		match := true
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if !strings.Contains(","+lbls+",", ","+k+"="+strconv.Quote(v)+",") {
				match = false
			}
		}
		if !match {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			return v
		}
	}
	return math.NaN()
}

// ipv4Metric reads a kube-proxy gauge that is per ip_family in newer releases.
func ipv4Metric(text, name string) float64 {
	if v := MetricValue(text, name, "ip_family=IPv4"); !math.IsNaN(v) {
		return v
	}
	return MetricValue(text, name)
}

// WaitSynced waits until the node's kube-proxy has no pending change: every change it has
// received (Apply, Delete: given 300 ms to arrive) is covered by a completed sync. Timeout 60 s.
//
// From kube-proxy's metrics: a sync is known to cover the last queued change when it started
// after kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds (start = its end
// kubeproxy_sync_proxy_rules_last_timestamp_seconds minus its duration, read from the
// duration histogram's _sum when exactly one sync completed between two polls). When the start
// is unknown, a sync that ended after the last queued change and no further sync within the
// min-sync-period (+0.5 s) mean that no follow-up sync was pending.
func (l *Lab) WaitSynced(node string) error {
	n := l.Node(node)
	if n == nil {
		return fmt.Errorf("lab: no node %q", node)
	}
	l.mu.Lock()
	since := l.lastChange
	l.mu.Unlock()
	if d := time.Until(since.Add(300 * time.Millisecond)); d > 0 {
		time.Sleep(d)
	}
	return l.waitSynced(n, 60*time.Second)
}

type syncMetrics struct {
	synced, queued, count, sum float64
}

func (l *Lab) readSyncMetrics(n *Node) (syncMetrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	text, err := l.httpGetIn(ctx, n.NetNS, "http://"+metricsAddr+"/metrics")
	if err != nil {
		return syncMetrics{}, err
	}
	m := syncMetrics{
		synced: ipv4Metric(text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds"),
		queued: ipv4Metric(text, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"),
		count:  ipv4Metric(text, "kubeproxy_sync_proxy_rules_duration_seconds_count"),
		sum:    ipv4Metric(text, "kubeproxy_sync_proxy_rules_duration_seconds_sum"),
	}
	for _, p := range []*float64{&m.synced, &m.queued, &m.count, &m.sum} {
		if math.IsNaN(*p) {
			*p = 0
		}
	}
	return m, nil
}

// minSyncPeriod is the min-sync-period kube-proxy was started with (default 1 s).
func minSyncPeriod(args []string) time.Duration {
	d := time.Second
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && strings.HasSuffix(k, "min-sync-period") {
			if x, err := time.ParseDuration(v); err == nil {
				d = max(d, x)
			}
		}
	}
	return d
}

func (l *Lab) waitSynced(n *Node, timeout time.Duration) error {
	l.mu.Lock()
	p := n.proxy
	quiet := n.proxyMinSync + 500*time.Millisecond
	pod := n.proxyPod
	l.mu.Unlock()
	if p == nil && !pod {
		return fmt.Errorf("no kube-proxy running on %s", n.Name)
	}
	logTail := func() string {
		if p == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pod, err := l.Kubectl(ctx, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy",
				"--field-selector=spec.nodeName="+n.Name, "-o", "name")
			if err != nil || strings.TrimSpace(pod) == "" {
				return fmt.Sprintf("(no kube-proxy Pod on %s: %v)", n.Name, err)
			}
			out, err := l.Kubectl(ctx, "-n", "kube-system", "logs", strings.TrimSpace(pod), "--tail=30")
			if err != nil {
				return err.Error()
			}
			return out
		}
		b, _ := os.ReadFile(p.log)
		return lastLines(string(b), 30)
	}
	deadline := time.Now().Add(timeout)
	var (
		prev       syncMetrics
		havePrev   bool
		knownStart = math.NaN() // start of the last completed sync, when observed
		quietSince = time.Now()
		last       string
	)
	for {
		if p != nil && p.exited() {
			return fmt.Errorf("kube-proxy exited: %v\n%s", p.err, logTail())
		}
		m, err := l.readSyncMetrics(n)
		if err == nil {
			if havePrev && m.count != prev.count {
				knownStart = math.NaN()
				if m.count == prev.count+1 {
					knownStart = m.synced - (m.sum - prev.sum)
				}
				quietSince = time.Now()
			}
			prev, havePrev = m, true
			if m.count > 0 && m.synced > 0 {
				if !math.IsNaN(knownStart) && knownStart > m.queued {
					return nil
				}
				if m.synced >= m.queued && time.Since(quietSince) >= quiet {
					return nil
				}
			}
			last = fmt.Sprintf("syncs %v, last sync end %.3f, last queued %.3f", m.count, m.synced, m.queued)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not synced after %v (%s)\n%s", timeout, last, logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
