package snapshot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// saveNode writes snapshottest.Node(services, 10) to a file of the given
// extension and returns its path.
func saveNode(b *testing.B, services int, ext string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "node"+ext)
	if err := snapshot.Save(snapshottest.Node(services, 10), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// setSize reports the file's size, as the bytes processed per operation
// and in MB; after the loop, which resets reported metrics.
func setSize(b *testing.B, path string) {
	b.Helper()
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportMetric(float64(st.Size())/1e6, "MB")
}

func benchmarkSaveBinary(b *testing.B, services int) {
	s := snapshottest.Node(services, 10)
	path := filepath.Join(b.TempDir(), "node.snap")
	b.ReportAllocs()
	for b.Loop() {
		if err := snapshot.Save(s, path); err != nil {
			b.Fatal(err)
		}
	}
	setSize(b, path)
}

func benchmarkLoadBinary(b *testing.B, services int) {
	path := saveNode(b, services, snapshot.BinaryExt)
	b.ReportAllocs()
	for b.Loop() {
		s, err := snapshot.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Cluster.Services) != services {
			b.Fatalf("%d services, want %d", len(s.Cluster.Services), services)
		}
	}
	setSize(b, path)
}

// benchmarkLoadPartial loads one Service (and what it needs) of the node.
func benchmarkLoadPartial(b *testing.B, services int) {
	path := saveNode(b, services, snapshot.BinaryExt)
	s := services / 2
	want := []types.NamespacedName{{Namespace: fmt.Sprintf("ns-%d", s%97), Name: fmt.Sprintf("svc-%d", s)}}
	b.ReportAllocs()
	for b.Loop() {
		snap, err := snapshot.LoadPartial(path, want)
		if err != nil {
			b.Fatal(err)
		}
		if c := snap.Cluster; len(c.Services) != 1 || len(c.EndpointSlices) != 1 || len(c.Partial.ServiceNames) != services {
			b.Fatalf("%d services, %d slices, %d names", len(c.Services), len(c.EndpointSlices), len(c.Partial.ServiceNames))
		}
	}
	setSize(b, path)
}

func BenchmarkSaveBinary1k(b *testing.B)   { benchmarkSaveBinary(b, 1000) }
func BenchmarkSaveBinary10k(b *testing.B)  { benchmarkSaveBinary(b, 10000) }
func BenchmarkLoadBinary1k(b *testing.B)   { benchmarkLoadBinary(b, 1000) }
func BenchmarkLoadBinary10k(b *testing.B)  { benchmarkLoadBinary(b, 10000) }
func BenchmarkLoadPartial1k(b *testing.B)  { benchmarkLoadPartial(b, 1000) }
func BenchmarkLoadPartial10k(b *testing.B) { benchmarkLoadPartial(b, 10000) }
