package analysis_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestDriftComparesNodes checks three nodes of a snapshot, one of which
// sends a Service to another backend: beside its drift, the report says
// that it does otherwise than the two other nodes.
func TestDriftComparesNodes(t *testing.T) {
	s := snapshottest.Node(3, 2)
	s.Cluster.Nodes = append(s.Cluster.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node3"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.12"}}}})
	for _, name := range []string{"node2", "node3"} {
		n := s.Nodes[0]
		n.Name = name
		n.Dumps = append(n.Dumps[:0:0], n.Dumps...)
		s.Nodes = append(s.Nodes, n)
	}
	s.Nodes[1].Addresses, s.Nodes[2].Addresses = []string{snapshottest.Node2IP}, []string{"192.0.2.12"}
	bad := strings.Replace(s.Nodes[2].Dumps[0].Text, "--to-destination 10.244.0.2:8080", "--to-destination 10.244.9.9:8080", 1)
	if bad == s.Nodes[2].Dumps[0].Text {
		t.Fatal("the dump has no DNAT to 10.244.0.2:8080")
	}
	s.Nodes[2].Dumps[0].Text = bad
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		if f.Node != "node3" {
			t.Errorf("finding on %s: %+v", f.Node, f)
		}
	}
	want := "nodes differ: ClusterIP 10.96.0.11:80/TCP (ns-1/svc-1:http) from pod clients: node node3 forwards to 2 backends, but not as the 2 other nodes do"
	found := false
	for _, n := range r.Notes {
		found = found || n == want
		if strings.HasPrefix(n, "nodes differ:") && !strings.Contains(n, "node node3 ") {
			t.Errorf("a difference of another node: %s", n)
		}
	}
	if !found {
		t.Errorf("no %q in the notes:\n%s", want, strings.Join(r.Notes, "\n"))
	}
}
