// Package analysistest loads the real capture the unit tests of the
// analysis and of repair share: node1 of testdata/kube-proxy-v1.36.3/two-nodes
// (kube-proxy 1.36.3, iptables mode), optionally with its API objects
// changed first.
package analysistest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// captureDir is the capture's directory, found from this file's place.
func captureDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("analysistest: cannot locate the capture")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "kube-proxy-v1.36.3", "two-nodes")
}

// Node1 analyses node1 of the capture after api, when not nil, has changed
// its API objects (as if kube-proxy had not synced since).
func Node1(t testing.TB, api func(c *snapshot.Cluster)) *analysis.NodeAnalysis {
	t.Helper()
	dir := captureDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "objects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := model.DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	if api != nil {
		api(c)
	}
	dump, err := os.ReadFile(filepath.Join(dir, "node1.iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind, Cluster: c,
		Metadata: snapshot.Metadata{CreationTimestamp: time.Now()},
		Nodes:    []snapshot.NodeState{{Name: "node1", Dumps: []snapshot.Dump{{Collector: "iptables-save", Family: "IPv4", Text: string(dump)}}}}}
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Slice returns an EndpointSlice of the objects, failing the test when
// there is none of that name.
func Slice(t testing.TB, c *snapshot.Cluster, ns, name string) *discoveryv1.EndpointSlice {
	t.Helper()
	for i := range c.EndpointSlices {
		if c.EndpointSlices[i].Namespace == ns && c.EndpointSlices[i].Name == name {
			return &c.EndpointSlices[i]
		}
	}
	t.Fatalf("the capture has no EndpointSlice %s/%s", ns, name)
	return nil
}
