package inspect

import (
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseKubeProxySync reads a real kube-proxy v1.36.3's /metrics (the
// lab's capture): its per-family sync gauges and duration histogram.
func TestParseKubeProxySync(t *testing.T) {
	text, err := os.ReadFile("../testdata/kube-proxy-v1.36.3/two-nodes/node1.kube-proxy-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		family          string
		synced, queued  float64
		syncs           uint64
		sum             float64
		pendingExpected bool
	}{
		{"IPv4", 1.7952554430035212e+09, 1.7952554420174546e+09, 3, 0.158930929, false},
		{"IPv6", 1.7952553506482074e+09, 1.795255350414886e+09, 1, 0.063050822, false},
	} {
		s, err := ParseKubeProxySync(text, tc.family)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(s.LastSync.UnixNano()) / 1e9; !near(got, tc.synced) {
			t.Errorf("%s: last sync %v, want %v", tc.family, got, tc.synced)
		}
		if got := float64(s.LastQueued.UnixNano()) / 1e9; !near(got, tc.queued) {
			t.Errorf("%s: last queued %v, want %v", tc.family, got, tc.queued)
		}
		if s.Syncs != tc.syncs || !near(s.SyncSeconds, tc.sum) {
			t.Errorf("%s: %d syncs in %v s, want %d in %v", tc.family, s.Syncs, s.SyncSeconds, tc.syncs, tc.sum)
		}
		if s.Pending() != tc.pendingExpected {
			t.Errorf("%s: pending %v", tc.family, s.Pending())
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 }

// TestParseKubeProxySyncShapes: a kube-proxy before its first sync has
// none of the metrics (zero values, no error); one from before 1.28 has no
// ip_family label (taken for any family); text that is not Prometheus's
// is an error.
func TestParseKubeProxySyncShapes(t *testing.T) {
	s, err := ParseKubeProxySync([]byte("# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 12\n"), "IPv4")
	if err != nil || !s.LastSync.IsZero() || s.Syncs != 0 || s.Pending() {
		t.Errorf("no sync metrics: %+v, %v", s, err)
	}
	old := "kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7e+09\nkubeproxy_sync_proxy_rules_last_queued_timestamp_seconds 1.71e+09\n"
	s, err = ParseKubeProxySync([]byte(old), "IPv6")
	if err != nil || s.LastSync.Unix() != 1700000000 || !s.Pending() {
		t.Errorf("unlabelled: %+v, %v", s, err)
	}
	if _, err := ParseKubeProxySync([]byte("<html>not metrics</html>\n"), "IPv4"); err == nil {
		t.Error("HTML read as metrics")
	}
}

// TestReadKubeProxySync reads over HTTP, and names the address when it
// cannot.
func TestReadKubeProxySync(t *testing.T) {
	text, err := os.ReadFile("../testdata/kube-proxy-v1.36.3/two-nodes/node1.kube-proxy-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Write(text)
	}), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	s, err := ReadKubeProxySync(t.Context(), ln.Addr().String(), "IPv4")
	if err != nil || s.Syncs != 3 {
		t.Fatalf("%+v, %v", s, err)
	}
	srv.Close()
	_, err = ReadKubeProxySync(t.Context(), ln.Addr().String(), "IPv4")
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error %v does not name the address", err)
	}
}

// TestParseKubeProxySyncFailures reads the write failures kube-proxy
// counts, labelled by family as v1.36.3 exports them (the lab's capture,
// with the counters a failing kube-proxy adds).
func TestParseKubeProxySyncFailures(t *testing.T) {
	text, err := os.ReadFile("../testdata/kube-proxy-v1.36.3/two-nodes/node1.kube-proxy-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	text = append(text, []byte(`# HELP kubeproxy_sync_proxy_rules_iptables_restore_failures_total [ALPHA] Cumulative proxy iptables restore failures
# TYPE kubeproxy_sync_proxy_rules_iptables_restore_failures_total counter
kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv4"} 7
kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv6"} 1
# HELP kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total [ALPHA] Cumulative proxy iptables partial restore failures
# TYPE kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total counter
kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total{ip_family="IPv4"} 2
`)...)
	for family, want := range map[string][2]uint64{"IPv4": {7, 2}, "IPv6": {1, 0}} {
		s, err := ParseKubeProxySync(text, family)
		if err != nil {
			t.Fatal(err)
		}
		if s.RestoreFailures != want[0] || s.PartialRestoreFailures != want[1] || s.NFTablesFailures != 0 {
			t.Errorf("%s: failures %d, %d partial, %d nft; want %d, %d, 0", family, s.RestoreFailures, s.PartialRestoreFailures, s.NFTablesFailures, want[0], want[1])
		}
	}
}
