//go:build benchnode && linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// measurer runs commands inside a lab namespace and measures them.
type measurer struct {
	t      *testing.T
	ns     string // network namespace (ip netns exec)
	dir    string // where outputs go
	repeat int
}

// run runs argv in the namespace repeat times, its stdout to stdoutPath (dir/<name>.out when
// empty), and returns the fastest run's wall time and its peak RSS: the largest resident set
// of the process or of a child it waited for (ip netns exec execs the command; svctrace's
// --local runs iptables-*-save and nft as children). A non-zero exit fails the test with the
// start of the output; drift's exit 1 (drift found) keeps its measurement, any other failure
// gives none.
func (m measurer) run(name, stdoutPath string, argv ...string) benchResult {
	m.t.Helper()
	if stdoutPath == "" {
		stdoutPath = filepath.Join(m.dir, strings.ReplaceAll(name, " ", "_")+".out")
	}
	var best benchResult
	for i := range max(1, m.repeat) {
		f, err := os.Create(stdoutPath)
		if err != nil {
			m.t.Fatal(err)
		}
		var stderr bytes.Buffer
		// GNU time reports the peak RSS of the command alone. The rusage
		// of a child of this test would not: a forked child keeps the
		// resident set of the process it was forked from as its peak,
		// and this test holds thousands of objects.
		rssFile := stdoutPath + ".rss"
		cmd := exec.Command(gnuTime, append([]string{"-f", "%M", "-o", rssFile, "ip", "netns", "exec", m.ns}, argv...)...)
		cmd.Stdout, cmd.Stderr = f, &stderr
		start := time.Now()
		err = cmd.Run()
		wall := time.Since(start)
		f.Close()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			m.t.Fatalf("%s: %v", name, err)
		}
		if code != 0 {
			out, _ := os.ReadFile(stdoutPath)
			m.t.Errorf("%s: exit %d (%s)\nstdout:\n%s\nstderr:\n%s", name, code, strings.Join(argv, " "),
				headLines(string(out), 40), headLines(stderr.String(), 20))
			if !(code == 1 && strings.HasPrefix(name, "drift")) {
				return benchResult{}
			}
		}
		res := benchResult{Wall: wall}
		rss, err := os.ReadFile(rssFile)
		if err != nil {
			m.t.Fatalf("%s: reading its peak RSS: %v", name, err)
		}
		if res.MaxRSSKiB, err = strconv.ParseInt(lastLine(string(rss)), 10, 64); err != nil {
			m.t.Fatalf("%s: %s from GNU time is no peak RSS: %v", name, rssFile, err)
		}
		out, _ := os.ReadFile(stdoutPath)
		m.t.Logf("%s: %v, max RSS %d KiB, exit %d, output starts:\n%s", name, wall.Round(time.Millisecond), res.MaxRSSKiB, code,
			headLines(string(out), 3))
		if i == 0 || res.Wall < best.Wall {
			best = res
		}
	}
	return best
}

// runTimed is run for a command that times its own work and prints it as JSON
// ({"seconds": ..., "firstSeconds": ...}, test/e2e/benchagent): the wall times kept are the
// command's own, of the fastest of repeat runs, of its work (seconds) and, when it tells, of
// the first time it did it (firstSeconds); the peak RSS is still the whole process's.
func (m measurer) runTimed(name string, argv ...string) (best, bestFirst benchResult) {
	m.t.Helper()
	out := filepath.Join(m.dir, strings.ReplaceAll(name, " ", "_")+".out")
	once := m
	once.repeat = 1
	for i := range max(1, m.repeat) {
		res := once.run(name, out, argv...)
		if res.Wall == 0 {
			return benchResult{}, benchResult{}
		}
		b, err := os.ReadFile(out)
		if err != nil {
			m.t.Fatal(err)
		}
		var timed struct {
			Seconds      float64 `json:"seconds"`
			FirstSeconds float64 `json:"firstSeconds"`
		}
		if err := json.Unmarshal(b, &timed); err != nil || timed.Seconds <= 0 {
			m.t.Fatalf("%s: no time in its output (%v):\n%s", name, err, headLines(string(b), 5))
		}
		first := res
		res.Wall = time.Duration(timed.Seconds * float64(time.Second))
		first.Wall = time.Duration(timed.FirstSeconds * float64(time.Second))
		if i == 0 || res.Wall < best.Wall {
			best = res
		}
		if i == 0 || first.Wall < bestFirst.Wall {
			bestFirst = first
		}
	}
	return best, bestFirst
}

// buildBenchAgent builds test/e2e/benchagent, the agent's kernel read and analysis.
func buildBenchAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "benchagent")
	cmd := exec.Command("go", "build", "-tags", "benchnode", "-o", bin, "github.com/svctrace/svctrace/test/e2e/benchagent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building benchagent: %v\n%s", err, out)
	}
	return bin
}

// gnuTime is GNU time, which measures each command's peak RSS (Debian
// package time).
const gnuTime = "/usr/bin/time"

// lastLine is the last non-empty line of s (GNU time writes a note on a
// failed command before the number).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// listObjects times a GET of every Service and every EndpointSlice (JSON, the whole list
// each, as kubectl get does them), the fastest of repeat, and writes those lists and the
// Nodes (not timed) to path, the objects file of drift --objects.
func listObjects(t *testing.T, l *lab.Lab, path string, repeat int) benchResult {
	t.Helper()
	ctx := context.Background()
	var best time.Duration
	var lists [][]byte
	for i := range max(1, repeat) {
		lists = lists[:0]
		start := time.Now()
		for _, p := range []string{"/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices"} {
			b, err := l.Request(ctx, "GET", p, "", nil)
			if err != nil {
				t.Fatalf("listing %s: %v", p, err)
			}
			lists = append(lists, b)
		}
		d := time.Since(start)
		t.Logf("list: %v", d.Round(time.Millisecond))
		if i == 0 || d < best {
			best = d
		}
	}
	nodes, err := l.Request(ctx, "GET", "/api/v1/nodes", "", nil)
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	// A stream of JSON documents: a NodeList, a ServiceList, an EndpointSliceList.
	data := bytes.Join(append([][]byte{nodes}, lists...), []byte("\n"))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return benchResult{Wall: best}
}

// waitBenchRules waits until kube-proxy's rules on node1 hold a service chain for every
// Service and an endpoint (chain, or numgen map element in nftables mode) for every endpoint of the benchmark (the cluster's own
// "kubernetes" Service adds one of each), then until kube-proxy has nothing left to sync.
func waitBenchRules(t *testing.T, l *lab.Lab, r *benchRun) {
	t.Helper()
	start := time.Now()
	timeout := 10*time.Minute + time.Duration(r.Services)*150*time.Millisecond
	var svc, sep int
	lastLog := time.Now()
	for {
		var err error
		svc, sep, err = countProxyChains(l, r.Mode, r.Backend)
		if err != nil {
			t.Fatal(err)
		}
		if svc >= r.Services && sep >= r.Services*r.Endpoints {
			break
		}
		if time.Since(start) > timeout {
			t.Fatalf("kube-proxy's rules after %v: %d service and %d endpoint chains, want %d and %d",
				timeout, svc, sep, r.Services, r.Services*r.Endpoints)
		}
		if time.Since(lastLog) > 30*time.Second {
			t.Logf("waiting for kube-proxy: %d service and %d endpoint chains so far", svc, sep)
			lastLog = time.Now()
		}
		time.Sleep(3 * time.Second)
	}
	var err error
	for range 5 {
		if err = l.WaitSynced("node1"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("kube-proxy not idle after its rules were complete: %v", err)
	}
	t.Logf("kube-proxy synced %d service and %d endpoint chains %v after the objects were created",
		svc, sep, time.Since(start).Round(time.Millisecond))
}

// nftMapEndpoint is an endpoint in the numgen map of kube-proxy 1.36's service chains.
var nftMapEndpoint = regexp.MustCompile(`\d+ : \d+\.\d+\.\d+\.\d+ \. \d+\b`)

// countProxyChains counts kube-proxy's per-Service and per-endpoint chains on node1.
func countProxyChains(l *lab.Lab, mode, backend string) (svc, sep int, err error) {
	if mode == "nftables" {
		out, err := l.Exec("node1", "nft", "list", "table", "ip", "kube-proxy")
		if err != nil {
			return 0, 0, fmt.Errorf("listing kube-proxy's nftables table: %w", err)
		}
		// An endpoint is a chain of its own before kube-proxy 1.36 (its DNAT inside), an
		// element "N : IP . PORT" of its Service's numgen map since.
		for line := range strings.SplitSeq(out, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "chain service-") && strings.Contains(line, "/"):
				svc++
			case strings.HasPrefix(line, "chain endpoint-"):
				sep++
			default:
				sep += len(nftMapEndpoint.FindAllStringIndex(line, -1))
			}
		}
		return svc, sep, nil
	}
	save := "iptables-legacy-save"
	if backend == "nf_tables" {
		save = "iptables-nft-save"
	}
	out, err := l.Exec("node1", save, "-t", "nat")
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", save, err)
	}
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(line, ":KUBE-SVC-"):
			svc++
		case strings.HasPrefix(line, ":KUBE-SEP-"):
			sep++
		}
	}
	return svc, sep, nil
}

// forceFullSyncs makes kube-proxy run n full syncs of the state it has, one after the other,
// by changing node1's topology.kubernetes.io/zone label (kube-proxy resyncs every rule when its
// node's zone changes; the benchmark's EndpointSlices have no hints, so the rules stay the
// same), and returns their mean duration from kubeproxy_sync_full_proxy_rules_duration_seconds
// (the sum and count of its histogram before and after; kubeproxy_sync_proxy_rules_duration_
// seconds on releases without it).
func forceFullSyncs(t *testing.T, l *lab.Lab, n int) benchResult {
	t.Helper()
	metric := "kubeproxy_sync_full_proxy_rules_duration_seconds"
	c0, s0 := syncHistogram(t, l, metric)
	if math.IsNaN(c0) {
		metric = "kubeproxy_sync_proxy_rules_duration_seconds"
		if c0, s0 = syncHistogram(t, l, metric); math.IsNaN(c0) {
			t.Fatalf("kube-proxy has no %s", metric)
		}
		t.Logf("no full-sync histogram: using %s", metric)
	}
	c, s := c0, s0
	for i := range n {
		prev := s
		label := fmt.Sprintf(`{"metadata":{"labels":{"topology.kubernetes.io/zone":"bench-%d-%d"}}}`, time.Now().UnixNano(), i)
		if _, err := l.Request(context.Background(), "PATCH", "/api/v1/nodes/node1", "application/merge-patch+json", []byte(label)); err != nil {
			t.Fatalf("relabelling node1: %v", err)
		}
		deadline := time.Now().Add(30 * time.Minute)
		for c < c0+float64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("kube-proxy ran no full sync within 30 minutes of the zone change (%s count %v)", metric, c)
			}
			time.Sleep(200 * time.Millisecond)
			c, s = syncHistogram(t, l, metric)
		}
		t.Logf("full sync %d: %.3f s", i+1, s-prev)
	}
	mean := (s - s0) / (c - c0)
	t.Logf("kube-proxy: %v full syncs, mean %.3f s", c-c0, mean)
	return benchResult{Wall: time.Duration(mean * float64(time.Second))}
}

// syncHistogram reads count and sum of a kube-proxy duration histogram (IPv4), NaN if absent.
func syncHistogram(t *testing.T, l *lab.Lab, metric string) (count, sum float64) {
	t.Helper()
	text, err := l.KubeProxyMetrics("node1")
	if err != nil {
		t.Fatalf("kube-proxy metrics: %v", err)
	}
	get := func(name string) float64 {
		if v := lab.MetricValue(text, name, "ip_family=IPv4"); !math.IsNaN(v) {
			return v
		}
		return lab.MetricValue(text, name)
	}
	return get(metric + "_count"), get(metric + "_sum")
}
