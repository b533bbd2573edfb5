package analysis_test

import (
	"reflect"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestSyntheticNFTNodeHealthy keeps the nftables benchmarks' node honest,
// as TestSyntheticNodeHealthy does the iptables one: drift finds nothing on
// it, checks every Service, and finds an endpoint the API dropped.
func TestSyntheticNFTNodeHealthy(t *testing.T) {
	r, err := analysis.Drift(snapshottest.NodeNFTables(50, 4), analysis.DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Errorf("%d findings on the synthetic node, first: %+v", len(r.Findings), r.Findings[0])
	}
	if r.Nodes[0].Frontends != 50 {
		t.Errorf("%d frontends checked, want 50", r.Nodes[0].Frontends)
	}
	s := snapshottest.NodeNFTables(50, 4)
	s.Cluster.EndpointSlices[7].Endpoints = s.Cluster.EndpointSlices[7].Endpoints[1:]
	r, err = analysis.Drift(s, analysis.DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Type != "StaleEndpoint" || r.Findings[0].Service != "ns-7/svc-7:http" {
		t.Errorf("findings %+v, want one StaleEndpoint of ns-7/svc-7:http", r.Findings)
	}
	// Services without endpoints are rejected, as kube-proxy does.
	r, err = analysis.Drift(snapshottest.NodeNFTables(5, 0), analysis.DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 || r.Nodes[0].Frontends != 5 {
		t.Errorf("without endpoints: %d frontends, findings %+v; want 5 and none", r.Nodes[0].Frontends, r.Findings)
	}
}

// TestSyntheticNFTNodeReadsLikeCapture: the nftables plane reads the same
// settings off the synthetic node as off the lab's node1 with real
// kube-proxy v1.36.3 in nftables mode, notes nothing on it, and both are
// free of drift.
func TestSyntheticNFTNodeReadsLikeCapture(t *testing.T) {
	lab, err := snapshot.Load("../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*snapshot.Snapshot{lab, snapshottest.NodeNFTables(20, 3)} {
		// Settings as the plane reads them, not as the snapshot tells.
		s.Nodes[0].KubeProxy = snapshot.ProxyConfig{}
	}
	real, err := analysis.Analyze(lab, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	synth, err := analysis.Analyze(snapshottest.NodeNFTables(20, 3), "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	ri, si := real.Plane.Infer(), synth.Plane.Infer()
	ri.Evidence, si.Evidence = nil, nil
	if !reflect.DeepEqual(ri, si) {
		t.Errorf("settings read off the synthetic node %+v, off the capture %+v", si, ri)
	}
	if n := synth.Plane.Notes(); len(n) != 0 {
		t.Errorf("notes on the synthetic rules: %q", n)
	}
	for name, a := range map[string]*analysis.NodeAnalysis{"capture": real, "synthetic": synth} {
		if a.Plane.Mode() != "nftables" || len(a.Findings) != 0 {
			t.Errorf("%s: plane %s, findings %+v", name, a.Plane.Mode(), a.Findings)
		}
	}
	if got := len(synth.Plane.Frontends()); got != 20 {
		t.Errorf("the plane lists %d frontends on the synthetic node, want 20", got)
	}
}

// benchmarkAnalyzeNFT is drift's whole analysis of an nftables node in
// memory: parse, expected, observe, compare; lean, as drift runs it.
func benchmarkAnalyzeNFT(b *testing.B, services int) {
	s := snapshottest.NodeNFTables(services, 10)
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

func BenchmarkAnalyzeNFT1k(b *testing.B)  { benchmarkAnalyzeNFT(b, 1000) }
func BenchmarkAnalyzeNFT10k(b *testing.B) { benchmarkAnalyzeNFT(b, 10000) }

// benchmarkAnalyzeOneNFT is explain's analysis of one Service of an
// nftables node.
func benchmarkAnalyzeOneNFT(b *testing.B, services int) {
	s := snapshottest.NodeNFTables(services, 10)
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

func BenchmarkAnalyzeOneNFT1k(b *testing.B)  { benchmarkAnalyzeOneNFT(b, 1000) }
func BenchmarkAnalyzeOneNFT10k(b *testing.B) { benchmarkAnalyzeOneNFT(b, 10000) }

// benchmarkRecheckNFT is the agent's check of an nftables node after one
// EndpointSlice changed.
func benchmarkRecheckNFT(b *testing.B, services int) {
	s := snapshottest.NodeNFTables(services, 10)
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		b.Fatal(err)
	}
	es := &s.Cluster.EndpointSlices[services/2]
	es.Endpoints = es.Endpoints[1:]
	ref := analysis.ServiceRef{Namespace: es.Namespace, Name: es.Labels["kubernetes.io/service-name"]}
	b.ReportAllocs()
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

func BenchmarkRecheckNFT1k(b *testing.B)  { benchmarkRecheckNFT(b, 1000) }
func BenchmarkRecheckNFT10k(b *testing.B) { benchmarkRecheckNFT(b, 10000) }
