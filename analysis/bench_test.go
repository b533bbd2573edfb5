package analysis_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestSyntheticNodeHealthy keeps the benchmarks' nodes honest, in both
// modes: each is what kube-proxy would program for its objects, so drift
// finds nothing, and every Service is checked; an endpoint the API dropped
// is found; in nftables mode, Services without endpoints are rejected, as
// kube-proxy does (the iptables node is made with endpoints only).
func TestSyntheticNodeHealthy(t *testing.T) {
	for mode, node := range map[string]nodeMaker{"iptables": snapshottest.Node, "nftables": snapshottest.NodeNFTables} {
		r, err := analysis.Drift(node(50, 4), analysis.DriftOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Findings) != 0 {
			t.Errorf("%s: %d findings on the synthetic node, first: %+v", mode, len(r.Findings), r.Findings[0])
		}
		if r.Nodes[0].Frontends != 50 {
			t.Errorf("%s: %d frontends checked, want 50", mode, r.Nodes[0].Frontends)
		}
		s := node(50, 4)
		s.Cluster.EndpointSlices[7].Endpoints = s.Cluster.EndpointSlices[7].Endpoints[1:]
		r, err = analysis.Drift(s, analysis.DriftOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Findings) != 1 || r.Findings[0].Type != "StaleEndpoint" || r.Findings[0].Service != "ns-7/svc-7:http" {
			t.Errorf("%s: findings %+v, want one StaleEndpoint of ns-7/svc-7:http", mode, r.Findings)
		} else if ep := r.Findings[0].Endpoint; ep != "10.244.0.28:8080" {
			t.Errorf("%s: the finding names endpoint %q, want 10.244.0.28:8080", mode, ep)
		}
		if mode != "nftables" {
			continue
		}
		r, err = analysis.Drift(node(5, 0), analysis.DriftOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Findings) != 0 || r.Nodes[0].Frontends != 5 {
			t.Errorf("%s without endpoints: %d frontends, findings %+v; want 5 and none", mode, r.Nodes[0].Frontends, r.Findings)
		}
	}
}

// nodeMaker makes a synthetic node of so many Services × endpoints: one
// per data plane (snapshottest.Node, snapshottest.NodeNFTables).
type nodeMaker func(services, endpoints int) *snapshot.Snapshot

// benchmarkAnalyze is drift's whole analysis of a node whose snapshot is
// in memory (as in the agent): parse, expected, observe, compare; lean, as
// drift runs it.
func benchmarkAnalyze(b *testing.B, node nodeMaker, services int) {
	s := node(services, 10)
	b.ReportAllocs()
	for b.Loop() {
		a, err := analysis.AnalyzeWith(s, "node1", "IPv4", analysis.Options{Lean: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Findings) != 0 || len(a.Observed.Frontends) != services {
			b.Fatalf("%d frontends, %d findings", len(a.Observed.Frontends), len(a.Findings))
		}
	}
}

func BenchmarkAnalyze1k(b *testing.B)  { benchmarkAnalyze(b, snapshottest.Node, 1000) }
func BenchmarkAnalyze10k(b *testing.B) { benchmarkAnalyze(b, snapshottest.Node, 10000) }

// benchmarkLoad reads a snapshot file of the node in the given format.
func benchmarkLoad(b *testing.B, services int, ext string) {
	path := filepath.Join(b.TempDir(), "snap."+ext)
	if err := snapshot.Save(snapshottest.Node(services, 10), path); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snapshot.Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadYAML1k(b *testing.B)  { benchmarkLoad(b, 1000, "yaml") }
func BenchmarkLoadYAML10k(b *testing.B) { benchmarkLoad(b, 10000, "yaml") }
func BenchmarkLoadJSON1k(b *testing.B)  { benchmarkLoad(b, 1000, "json") }
func BenchmarkLoadJSON10k(b *testing.B) { benchmarkLoad(b, 10000, "json") }

// benchmarkAnalyzeOne is explain's analysis: one Service of the node, the
// rules parsed and the snapshot in memory.
func benchmarkAnalyzeOne(b *testing.B, node nodeMaker, services int) {
	s := node(services, 10)
	ref := analysis.ServiceRef{Namespace: s.Cluster.Services[services/2].Namespace, Name: s.Cluster.Services[services/2].Name}
	b.ReportAllocs()
	for b.Loop() {
		a, err := analysis.AnalyzeWith(s, "node1", "IPv4", analysis.Options{Service: &ref})
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Observed.Frontends) != 1 || len(a.Findings) != 0 {
			b.Fatalf("%d frontends, %d findings", len(a.Observed.Frontends), len(a.Findings))
		}
	}
}

func BenchmarkAnalyzeOne1k(b *testing.B)  { benchmarkAnalyzeOne(b, snapshottest.Node, 1000) }
func BenchmarkAnalyzeOne10k(b *testing.B) { benchmarkAnalyzeOne(b, snapshottest.Node, 10000) }

// benchmarkRecheck is the agent's check after one EndpointSlice changed:
// the node analysed once, then that Service again.
func benchmarkRecheck(b *testing.B, node nodeMaker, services int) {
	s := node(services, 10)
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		b.Fatal(err)
	}
	es := &s.Cluster.EndpointSlices[services/2]
	es.Endpoints = es.Endpoints[1:]
	ref := analysis.ServiceRef{Namespace: es.Namespace, Name: es.Labels["kubernetes.io/service-name"]}
	// The whole node's analysis left a heap to collect: collected now,
	// its marking does not land on the rechecks timed (as in the agent,
	// whose rechecks come long after its last full read).
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := a.Recheck(s.Cluster, ref)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Findings) != 1 {
			b.Fatalf("%d findings, want the stale endpoint", len(r.Findings))
		}
	}
}

func BenchmarkRecheck1k(b *testing.B)  { benchmarkRecheck(b, snapshottest.Node, 1000) }
func BenchmarkRecheck10k(b *testing.B) { benchmarkRecheck(b, snapshottest.Node, 10000) }
