package exporter

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/inspect"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// sampleStatus is an agent that checked twice: the last check failed to
// read the kernel; the good one before found drift and a pending change.
func sampleStatus() *agent.Status {
	kp := agent.KubeProxy{Mode: "iptables", Version: "v1.36.3", Backend: "legacy", LastSync: t0.Add(-3 * time.Second),
		MetricsDuration: 4 * time.Millisecond}
	good := &agent.Check{At: t0, Duration: 1500 * time.Millisecond, KubeProxy: kp, Frontends: 42,
		Reads: []inspect.Read{{Collector: "iptables-save/legacy", Duration: 300 * time.Millisecond}, {Collector: "conntrack", Duration: time.Millisecond}},
		Drift: []behavior.Finding{
			{Type: behavior.MissingEndpoint, Service: "shop/cart:http", Endpoint: "10.244.1.7:8080"},
			{Type: behavior.MissingEndpoint, Service: "shop/cart:grpc", Endpoint: "10.244.1.7:9090"},
			{Type: behavior.StaleConntrack, Service: "kube-system/kube-dns:dns", Endpoint: "10.244.2.9:53"},
			{Type: behavior.LeftoverRules},
		},
		Pending: []behavior.Finding{{Type: behavior.MissingFrontend, Service: "shop/new:http"}},
	}
	last := &agent.Check{At: t0.Add(time.Minute), Duration: 20 * time.Millisecond, Err: errors.New("reading the kernel's state: boom"),
		APIErr: errors.New("connection refused"), APIDownSince: t0,
		Reads:     []inspect.Read{{Collector: "iptables-save/legacy", Duration: 10 * time.Millisecond, Err: errors.New("boom")}},
		KubeProxy: agent.KubeProxy{MetricsErr: errors.New("connection refused"), MetricsDuration: time.Millisecond, Absent: true, DaemonSet: "kube-system/kube-proxy"}}
	return &agent.Status{Node: "node1", Started: t0.Add(-time.Hour), Synced: true, SyncedAt: t0.Add(-59 * time.Minute),
		StaleAfter: 5 * time.Minute, Last: last, Good: good, Checks: 7, Failed: 1,
		WatchErrors: 2, LastWatchError: t0.Add(-time.Minute)}
}

// TestCollectorGolden compares the metrics of a sample status with
// testdata/sample.prom (go test -update rewrites it), and lints them.
func TestCollectorGolden(t *testing.T) {
	c := NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{EndpointLabels: true})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	got, err := testutil.GatherAndCount(reg)
	if err != nil || got == 0 {
		t.Fatalf("%d metrics, %v", got, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	golden := "testdata/sample.prom"
	if *update {
		var b strings.Builder
		for _, mf := range mfs {
			b.WriteString(exposition(mf))
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(reg, f); err != nil {
		t.Error(err)
	}
}

// TestCollectorBeforeFirstCheck: a starting agent shows its build and
// counters, and no findings it has not looked for.
func TestCollectorBeforeFirstCheck(t *testing.T) {
	c := NewCollector(func() *agent.Status { return &agent.Status{Node: "node1"} }, "v0.1.0", Options{})
	if n := testutil.CollectAndCount(c, "svctrace_drift_findings", "svctrace_last_check_success"); n != 0 {
		t.Errorf("%d finding or check metrics before any check", n)
	}
	if n := testutil.CollectAndCount(c, "svctrace_build_info"); n != 1 {
		t.Errorf("%d build_info", n)
	}
}

// TestCollectorEndpointLabelsOptIn: no series per endpoint unless asked.
func TestCollectorEndpointLabelsOptIn(t *testing.T) {
	c := NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{})
	if n := testutil.CollectAndCount(c, "svctrace_endpoint_drift_findings"); n != 0 {
		t.Errorf("%d per-endpoint series without --endpoint-labels", n)
	}
	c = NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{EndpointLabels: true})
	if n := testutil.CollectAndCount(c, "svctrace_endpoint_drift_findings"); n != 3 {
		t.Errorf("%d per-endpoint series with --endpoint-labels, want 3", n)
	}
}
