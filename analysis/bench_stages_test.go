package analysis_test

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// The stages of an analysis, each alone, on the iptables node of
// snapshottest.Node: the benchmarks in bench_test.go time them together.

// benchmarkExpected is the expected side: kube-proxy's view of the node
// built from the API objects, and the behaviour table derived from it, as
// Analyze makes them (one probe space, which no endpoint may stand in).
func benchmarkExpected(b *testing.B, services int) {
	s := snapshottest.Node(services, 10)
	cfg := s.Nodes[0].KubeProxy
	cidrs := behavior.ParsePrefixes(cfg.ClusterCIDRs)
	nodeIPs := []netip.Addr{netip.MustParseAddr(snapshottest.Node1IP)}
	b.ReportAllocs()
	for b.Loop() {
		v, err := model.BuildNodeView(s.Cluster, "node1", "IPv4")
		if err != nil {
			b.Fatal(err)
		}
		taken := map[netip.Addr]bool{}
		for i := range v.Ports {
			for _, e := range v.Ports[i].Endpoints {
				if a, err := netip.ParseAddr(e.IP); err == nil {
					taken[a] = true
				}
			}
		}
		t, _ := analysis.Expected(analysis.ExpectedInput{View: v, Config: cfg,
			Probes: behavior.NewProbeSpace(cidrs, nodeIPs, taken)})
		if len(t.Frontends) != services {
			b.Fatalf("%d frontends, want %d", len(t.Frontends), services)
		}
	}
}

func BenchmarkExpected1k(b *testing.B)  { benchmarkExpected(b, 1000) }
func BenchmarkExpected10k(b *testing.B) { benchmarkExpected(b, 10000) }

// benchmarkCompare is drift's comparison of the expected and the observed
// tables of a node analysed as drift does (lean).
func benchmarkCompare(b *testing.B, services int) {
	a, err := analysis.AnalyzeWith(snapshottest.Node(services, 10), "node1", "IPv4", analysis.Options{Lean: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if fs := analysis.Compare(a.Expected, a.Observed); len(fs) != 0 {
			b.Fatalf("%d findings, first %+v", len(fs), fs[0])
		}
	}
	b.ReportMetric(float64(len(a.Expected.Frontends)), "frontends/op")
}

func BenchmarkCompare1k(b *testing.B)  { benchmarkCompare(b, 1000) }
func BenchmarkCompare10k(b *testing.B) { benchmarkCompare(b, 10000) }
