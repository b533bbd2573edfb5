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

// The benchmarks of analysis/bench_test.go on an nftables node.

func BenchmarkAnalyzeNFT1k(b *testing.B)  { benchmarkAnalyze(b, snapshottest.NodeNFTables, 1000) }
func BenchmarkAnalyzeNFT10k(b *testing.B) { benchmarkAnalyze(b, snapshottest.NodeNFTables, 10000) }

func BenchmarkAnalyzeOneNFT1k(b *testing.B) {
	benchmarkAnalyzeOne(b, snapshottest.NodeNFTables, 1000)
}
func BenchmarkAnalyzeOneNFT10k(b *testing.B) {
	benchmarkAnalyzeOne(b, snapshottest.NodeNFTables, 10000)
}

func BenchmarkRecheckNFT1k(b *testing.B)  { benchmarkRecheck(b, snapshottest.NodeNFTables, 1000) }
func BenchmarkRecheckNFT10k(b *testing.B) { benchmarkRecheck(b, snapshottest.NodeNFTables, 10000) }
