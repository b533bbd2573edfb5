package analysis_test

import (
	"reflect"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

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
