//go:build linux

package lab

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLabNetwork checks the namespace wiring alone (no control plane, no Kubernetes binaries):
// pod to pod on one node and across nodes, TCP and UDP, and the in-namespace dialer.
func TestLabNetwork(t *testing.T) {
	requireRoot(t)
	l := startNetwork(t, Options{Nodes: 2})
	a, err := l.AddPodSpec(PodSpec{Node: "node1", Name: "a", Listeners: []Listener{TCP(8080), UDP(5353)}, NoAPIObject: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.AddPodSpec(PodSpec{Node: "node2", Name: "b", Listeners: []Listener{TCP(8080), UDP(5353)}, NoAPIObject: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.AddPodSpec(PodSpec{Node: "node1", Name: "c", NoAPIObject: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, proto, addr, want string }{
		{c.Name, "tcp", a.IP + ":8080", "a"},
		{c.Name, "tcp", b.IP + ":8080", "b"},
		{c.Name, "udp", b.IP + ":5353", "b"},
		{"node2", "tcp", a.IP + ":8080", "a"},
		{"node1", "udp", a.IP + ":5353", "a"},
	} {
		res, err := l.Dial(tc.from, tc.proto, tc.addr, 3)
		if err != nil {
			t.Fatal(err)
		}
		if res.Hits[tc.want] != 3 {
			t.Errorf("%s -> %s %s: %v, want %s=3", tc.from, tc.proto, tc.addr, res, tc.want)
		}
	}
	// The starting namespace has no route into the lab; the in-namespace dialer does.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := dialInNetns(ctx, filepath.Join(netnsDir, b.NetNS), "tcp", "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if strings.TrimSpace(string(got)) != "b" {
		t.Errorf("dialInNetns answer %q, want b", got)
	}
	if _, err := l.AddPodSpec(PodSpec{Node: "node1", Name: "s", Listeners: []Listener{SCTP(9999)}, NoAPIObject: true}); SCTPSupported() != (err == nil) {
		t.Errorf("SCTP listener: supported=%v, err=%v", SCTPSupported(), err)
	}
}

func TestMetricValue(t *testing.T) {
	text := `# HELP x
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7952554430035212e+09
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 2
kubeproxy_sync_proxy_rules_last_timestamp_seconds_x 3
plain 4
`
	if v := MetricValue(text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds", "ip_family=IPv6"); v != 2 {
		t.Errorf("IPv6: %v", v)
	}
	if v := ipv4Metric(text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds"); v != 1.7952554430035212e+09 {
		t.Errorf("IPv4: %v", v)
	}
	if v := ipv4Metric(text, "plain"); v != 4 {
		t.Errorf("plain: %v", v)
	}
}
