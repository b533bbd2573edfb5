package analysis

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/svctrace/svctrace/behavior"
)

// DriftReport lists the drift findings of one or more nodes.
type DriftReport struct {
	metav1.TypeMeta `json:",inline"`
	Nodes           []NodeSummary      `json:"nodes"`
	Findings        []behavior.Finding `json:"findings"`
	Notes           []string           `json:"notes,omitempty"`
}

// NodeSummary says what was checked on a node.
type NodeSummary struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode,omitempty"`
	Frontends int      `json:"frontends"`
	Findings  int      `json:"findings"`
	Inferred  []string `json:"inferred,omitempty"`
}

// NewDriftReport returns an empty report with its type set.
func NewDriftReport() *DriftReport {
	return &DriftReport{TypeMeta: metav1.TypeMeta{APIVersion: "svctrace.dev/v1alpha1", Kind: "DriftReport"}, Findings: []behavior.Finding{}}
}

// DeepCopyObject implements runtime.Object for the printers.
func (r *DriftReport) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	out := &DriftReport{}
	if err := json.Unmarshal(b, out); err != nil {
		return r
	}
	return out
}
