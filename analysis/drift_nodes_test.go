package analysis_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestDriftOfNodes puts agents' reports together: findings in scope only,
// a node that could not be read listed with its error, a Service that is
// not there an error with its close match.
func TestDriftOfNodes(t *testing.T) {
	c := snapshottest.Node(3, 1).Cluster
	nodes := []analysis.NodeFindings{
		{Node: "node1", Mode: "iptables", Backend: "legacy", Frontends: 3, Pending: 2, PendingQueued: true, BytesRead: 900,
			CheckedAt: time.Now().Add(-3 * time.Second), ReadAt: time.Now().Add(-4 * time.Minute), ServiceFrontends: map[string]int{"ns-1/svc-1:http": 1, "ns-2/svc-2:http": 2}, Drift: []behavior.Finding{
				{Type: behavior.MissingEndpoint, Node: "node1", Service: "ns-1/svc-1:http", Message: "m1"},
				{Type: behavior.StaleFrontend, Node: "node1", Service: "ns-2/svc-2:http", Message: "m2"},
			}},
		{Node: "node2", Err: errors.New("no svctrace agent Pod runs there")},
	}
	r, err := analysis.DriftOfNodes(c, analysis.DriftOptions{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 2 || len(r.Nodes) != 2 || r.Nodes[0].Findings != 2 || r.Nodes[0].Pending != 2 || r.Nodes[0].BytesRead != 900 {
		t.Fatalf("%+v", r)
	}
	if n := r.Nodes[0]; n.CheckAge != "3s" || n.CheckedAt == nil || n.PendingWhy != analysis.PendingQueued {
		t.Errorf("node1 checked at %v, %q ago, pending %q", n.CheckedAt, n.CheckAge, n.PendingWhy)
	}
	if u := r.Unreadable(); len(u) != 1 || u[0] != "node2" || r.Nodes[1].Error == "" {
		t.Errorf("unreadable %v, node2 %+v", u, r.Nodes[1])
	}
	var b strings.Builder
	analysis.RenderDrift(&b, r, false)
	for _, want := range []string{"node node1 (iptables mode): 3 frontends checked 3s ago by its agent (rules read 4m0s ago, unchanged since), 2 findings (2 differences waiting for kube-proxy's next sync)",
		"node node2: not read: no svctrace agent Pod runs there", "MissingEndpoint  node=node1 service=ns-1/svc-1:http"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}

	ref, err := analysis.ParseServiceRef("ns-1/svc-1", "default")
	if err != nil {
		t.Fatal(err)
	}
	r, err = analysis.DriftOfNodes(c, analysis.DriftOptions{Scope: analysis.Scope{Service: &ref}}, nodes[:1])
	if err != nil || len(r.Findings) != 1 || r.Findings[0].Service != "ns-1/svc-1:http" || r.Nodes[0].Frontends != 1 {
		t.Errorf("scoped to ns-1/svc-1: %+v, %v", r, err)
	}
	// A namespace's frontends are its own, not the node's.
	r, err = analysis.DriftOfNodes(c, analysis.DriftOptions{Scope: analysis.Scope{Namespace: "ns-2"}}, nodes[:1])
	if err != nil || len(r.Findings) != 1 || r.Nodes[0].Frontends != 2 {
		t.Errorf("scoped to ns-2: %+v, %v", r, err)
	}
	b.Reset()
	r, err = analysis.DriftOfNodes(c, analysis.DriftOptions{}, []analysis.NodeFindings{{Node: "node1", Frontends: 3, Pending: 1}, nodes[1]})
	if err != nil {
		t.Fatal(err)
	}
	analysis.RenderDrift(&b, r, false)
	// kube-proxy had nothing queued: the difference is not its lag.
	if !strings.Contains(b.String(), "3 frontends checked, 0 findings (1 difference to be confirmed by the agent's next check)") {
		t.Errorf("a difference kube-proxy has nothing queued for:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "no drift on the 1 node read; 1 node not read") || strings.Contains(b.String(), "\nno drift\n") {
		t.Errorf("some nodes unread:\n%s", b.String())
	}

	typo, err := analysis.ParseServiceRef("ns-1/svc-11", "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := analysis.DriftOfNodes(c, analysis.DriftOptions{Scope: analysis.Scope{Service: &typo}}, nodes); err == nil ||
		!strings.Contains(err.Error(), "svc-1") {
		t.Errorf("a Service that is not there: %v", err)
	}
}

// TestDriftOfNodesConsistency: nodes whose kube-proxy runs in other modes,
// versions or backends than the others are named, the most common first.
func TestDriftOfNodesConsistency(t *testing.T) {
	c := snapshottest.Node(1, 1).Cluster
	var nodes []analysis.NodeFindings
	for i := range 7 {
		n := analysis.NodeFindings{Node: fmt.Sprintf("n%d", i), Mode: "iptables", Backend: "nf_tables", Version: "v1.36.3"}
		if i == 3 {
			n.Mode, n.Backend, n.Version = "nftables", "", "v1.33.13"
		}
		nodes = append(nodes, n)
	}
	nodes = append(nodes, analysis.NodeFindings{Node: "down", Err: errors.New("x")})
	r, err := analysis.DriftOfNodes(c, analysis.DriftOptions{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kube-proxy runs in several modes: iptables on n0, n1, n2, n4, n5 and 1 more; nftables on n3",
		"kube-proxy's versions differ: v1.36.3 on n0, n1, n2, n4, n5 and 1 more; v1.33.13 on n3",
	}
	if !slices.Equal(r.Notes, want) {
		t.Errorf("notes\n%q\nwant\n%q", r.Notes, want)
	}
}
