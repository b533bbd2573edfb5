package analysis_test

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestNamespaceScope: a drift report scoped to a namespace (kubectl's
// current one by default) keeps that namespace's findings and the node's
// own (a leftover names no Service), names its scope, and a namespace
// with no Service is an error that says where the name came from, also
// when only the agents' reports can tell.
func TestNamespaceScope(t *testing.T) {
	c := snapshottest.Node(3, 1).Cluster
	node := analysis.NodeFindings{Node: "node1", Mode: "iptables", Frontends: 3,
		ServiceFrontends: map[string]int{"ns-1/svc-1:http": 1, "ns-2/svc-2:http": 2}, Drift: []behavior.Finding{
			{Type: behavior.MissingEndpoint, Node: "node1", Service: "ns-1/svc-1:http", Message: "m1"},
			{Type: behavior.LeftoverRules, Node: "node1", Message: "rules of the userspace proxier"},
		}}
	scope := analysis.Scope{Namespace: "ns-2", Current: true}
	r, err := analysis.DriftOfNodes(c, analysis.DriftOptions{Scope: scope}, []analysis.NodeFindings{node})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Type != behavior.LeftoverRules || r.Scope != "namespace ns-2" || r.Nodes[0].Frontends != 2 {
		t.Errorf("scoped to ns-2: scope %q, findings %+v, nodes %+v", r.Scope, r.Findings, r.Nodes)
	}

	node.Drift = node.Drift[:1]
	r, err = analysis.DriftOfNodes(c, analysis.DriftOptions{Scope: scope}, []analysis.NodeFindings{node})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	analysis.RenderDrift(&b, r, false)
	if !strings.HasSuffix(b.String(), "\nno drift in namespace ns-2\n") {
		t.Errorf("no drift in ns-2, rendered:\n%s", b.String())
	}

	for name, cluster := range map[string]bool{"with the API objects": true, "from the agents' reports alone": false} {
		typo := analysis.Scope{Namespace: "ns-22", Current: true}
		cc := c
		if !cluster {
			cc = nil
		}
		_, err := analysis.DriftOfNodes(cc, analysis.DriftOptions{Scope: typo}, []analysis.NodeFindings{node})
		if err == nil || !strings.Contains(err.Error(), `namespace "ns-22" has no Service`) || !strings.Contains(err.Error(), "ns-2") ||
			!strings.Contains(err.Error(), "kubeconfig's current namespace") || !strings.Contains(err.Error(), "-A checks every namespace") {
			t.Errorf("%s: the current namespace has no Service: %v", name, err)
		}
		typo.Current = false
		_, err = analysis.DriftOfNodes(cc, analysis.DriftOptions{Scope: typo}, []analysis.NodeFindings{node})
		if err == nil || strings.Contains(err.Error(), "current namespace") {
			t.Errorf("%s: -n names a namespace with no Service: %v", name, err)
		}
	}
}
