package analysis

import (
	"reflect"
	"testing"

	"github.com/svctrace/svctrace/behavior"
)

func TestDriftReportDeepCopy(t *testing.T) {
	r := NewDriftReport()
	r.Nodes = []NodeSummary{{Name: "node1", Mode: "iptables", Frontends: 3, Inferred: []string{"mode from the rules"}}}
	r.Findings = []behavior.Finding{{Node: "node1", Message: "a finding"}}
	r.Notes = []string{"a note"}

	c, ok := r.DeepCopyObject().(*DriftReport)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", r.DeepCopyObject())
	}
	if c == r {
		t.Fatal("DeepCopyObject returned the report itself")
	}
	if !reflect.DeepEqual(c, r) {
		t.Fatalf("copy %+v differs from %+v", c, r)
	}
	c.Nodes[0].Inferred[0] = "changed"
	c.Notes[0] = "changed"
	if r.Nodes[0].Inferred[0] != "mode from the rules" || r.Notes[0] != "a note" {
		t.Error("the copy shares slices with the report")
	}
	if c.APIVersion != GroupVersion || c.Kind != "DriftReport" {
		t.Errorf("copy type %s %s", c.APIVersion, c.Kind)
	}
}
