package analysis_test

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// TestDropAfterTranslation: with the filter table's FORWARD policy DROP
// and no rule accepting a pod's new connection, a pod's connection to a
// ClusterIP is translated to a backend and then dropped on its way there:
// explain says DROP, as trace does, not "forward"; the node's own
// connections, which do not cross FORWARD, are still forwarded.
func TestDropAfterTranslation(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := &s.Nodes[0]
	edited := false
	for i, d := range n.Dumps {
		if d.Collector != "iptables-save" || !strings.Contains(d.Text, "KUBE-SERVICES") {
			continue
		}
		before, filter, ok := strings.Cut(d.Text, "*filter\n")
		if !ok {
			t.Fatal("no filter table")
		}
		n.Dumps[i].Text = before + "*filter\n" + strings.Replace(filter, ":FORWARD ACCEPT", ":FORWARD DROP", 1)
		edited = n.Dumps[i].Text != d.Text
	}
	if !edited {
		t.Fatal("no FORWARD policy changed")
	}
	a, err := analysis.Analyze(s, n.Name, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range a.Observed.Frontends {
		if f.Service != "default/web:http" || f.Key.Kind != behavior.ClusterIP {
			continue
		}
		found = true
		pod, node := f.Outcomes[behavior.FromPod], f.Outcomes[behavior.FromNode]
		if pod.Verdict != behavior.Drop || !strings.Contains(pod.Reason, "policy DROP of filter/FORWARD") || len(pod.Backends) != 0 {
			t.Errorf("from a pod: %+v, want a drop by filter/FORWARD's policy", pod)
		}
		if node.Verdict != behavior.Forward || len(node.Backends) != 3 {
			t.Errorf("from the node: %+v, want forwarded to 3 backends", node)
		}
	}
	if !found {
		t.Fatal("no ClusterIP of default/web:http")
	}
}
