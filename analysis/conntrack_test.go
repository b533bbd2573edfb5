package analysis_test

import (
	"net/netip"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/analysis/analysistest"
	"github.com/svctrace/svctrace/conntrack"
	"github.com/svctrace/svctrace/snapshot"
)

func entry(proto, client, dst, reply string) conntrack.Entry {
	c, d, r := netip.MustParseAddrPort(client), netip.MustParseAddrPort(dst), netip.MustParseAddrPort(reply)
	return conntrack.Entry{Family: "IPv4", Protocol: proto, Timeout: 100,
		Orig:  conntrack.Tuple{Src: c.Addr(), Dst: d.Addr(), SrcPort: c.Port(), DstPort: d.Port()},
		Reply: conntrack.Tuple{Src: r.Addr(), Dst: c.Addr(), SrcPort: r.Port(), DstPort: c.Port()}}
}

func TestCorrelateConntrack(t *testing.T) {
	// The API no longer lists 10.244.0.6 for default/nginx; the kernel's
	// rules (the capture) still do, as after a failed sync.
	a := analysistest.Node1(t, func(c *snapshot.Cluster) {
		s := analysistest.Slice(t, c, "default", "nginx-abc")
		s.Endpoints = []discoveryv1.Endpoint{s.Endpoints[0], s.Endpoints[2]}
	})
	entries := []conntrack.Entry{
		entry("tcp", "10.244.0.9:40001", "10.96.94.233:80", "10.244.0.5:8080"),   // fine
		entry("udp", "10.244.0.9:40002", "10.96.64.120:53", "10.244.0.99:5353"),  // gone backend
		entry("tcp", "10.244.0.9:40003", "10.96.94.233:80", "10.244.0.6:8080"),   // removed from the API
		entry("udp", "10.244.0.9:40004", "10.96.64.120:53", "10.96.64.120:53"),   // untranslated UDP
		entry("tcp", "10.244.0.9:40005", "10.96.40.90:80", "10.244.0.22:8080"),   // terminating
		entry("tcp", "10.244.0.9:40006", "192.0.2.10:32296", "10.244.0.20:8080"), // NodePort
		entry("tcp", "10.244.0.9:40007", "192.0.2.99:80", "192.0.2.99:80"),       // not a Service
	}
	flows := a.CorrelateConntrack(entries)
	got := map[string]string{}
	for _, f := range flows {
		got[f.Client] = f.Status
	}
	want := map[string]string{
		"10.244.0.9:40001": analysis.FlowOK,
		"10.244.0.9:40002": analysis.FlowStale,
		"10.244.0.9:40003": analysis.FlowStale,
		"10.244.0.9:40004": analysis.FlowStale,
		"10.244.0.9:40005": analysis.FlowDraining,
		"10.244.0.9:40006": analysis.FlowOK,
	}
	if len(got) != len(want) {
		t.Errorf("flows %v, want %v", got, want)
	}
	for c, st := range want {
		if got[c] != st {
			t.Errorf("client %s: %q, want %q (all: %v)", c, got[c], st, got)
		}
	}
	fs := analysis.ConntrackFindings("node1", flows)
	if len(fs) != 3 {
		t.Fatalf("%d findings, want 3: %+v", len(fs), fs)
	}
	for _, f := range fs {
		if f.Type != "StaleConntrack" || f.Node != "node1" || f.Service == "" {
			t.Errorf("finding %+v", f)
		}
	}
}

// A UDP entry to a Service that has no endpoints is kept alive by its
// client's packets, which then get neither a backend nor a reject.
func TestConntrackNoEndpoints(t *testing.T) {
	a := analysistest.Node1(t, func(c *snapshot.Cluster) { analysistest.Slice(t, c, "shop", "dns-1").Endpoints = nil })
	flows := a.CorrelateConntrack([]conntrack.Entry{entry("udp", "10.244.0.9:40008", "10.96.64.120:53", "10.96.64.120:53")})
	if len(flows) != 1 || flows[0].Status != analysis.FlowStale || !strings.Contains(flows[0].Reason, "no reject") {
		t.Errorf("flows %+v, want one stale flow that gets no reject", flows)
	}
}

// BenchmarkCorrelate100k ties 100,000 entries to the capture's frontends.
func BenchmarkCorrelate100k(b *testing.B) {
	a := analysistest.Node1(b, nil)
	eps := []string{"10.244.0.5:8080", "10.244.0.6:8080", "10.244.1.7:8080", "10.244.9.9:8080"}
	entries := make([]conntrack.Entry, 0, 100000)
	for i := range 100000 {
		client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 244, byte(i >> 16), byte(i >> 8)}), uint16(20000+i%40000))
		entries = append(entries, entry("tcp", client.String(), "10.96.94.233:80", eps[i%len(eps)]))
	}
	b.ResetTimer()
	b.ReportAllocs()
	for range b.N {
		if flows := a.CorrelateConntrack(entries); len(flows) != len(entries) {
			b.Fatalf("%d flows", len(flows))
		}
	}
}
