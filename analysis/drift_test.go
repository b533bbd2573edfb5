package analysis_test

import (
	"os"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// The drift scenarios themselves are testdata/scenarios/*.txtar, run by
// TestScenarios in cmd/kubectl-svctrace for iptables and nftables
// captures. What stays here serves the conntrack tests of this package.

const fixture = "../testdata/kube-proxy-v1.36.3/two-nodes/"

// analyze2 analyses node1 of the capture (iptables mode) after api, when
// not nil, has changed its API objects.
func analyze2(t testing.TB, api func(c *snapshot.Cluster)) *analysis.NodeAnalysis {
	t.Helper()
	data, err := os.ReadFile(fixture + "objects.yaml")
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
	dump, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind, Cluster: c,
		Metadata: snapshot.Metadata{CreationTimestamp: time.Now()},
		Nodes:    []snapshot.NodeState{{Name: "node1", Dumps: []snapshot.Dump{{Collector: snapshot.CollectorIPTablesSave, Family: "IPv4", Text: string(dump)}}}}}
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// slice returns the named EndpointSlice of c. The capture is fixed, so a
// name it lacks is a mistake in the test itself.
func slice(c *snapshot.Cluster, ns, name string) *discoveryv1.EndpointSlice {
	for i := range c.EndpointSlices {
		if c.EndpointSlices[i].Namespace == ns && c.EndpointSlices[i].Name == name {
			return &c.EndpointSlices[i]
		}
	}
	panic("the capture has no EndpointSlice " + ns + "/" + name)
}
