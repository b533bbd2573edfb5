package reconcile

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/svctrace/svctrace/analysis"
)

// ConntrackReport is what reconcile conntrack found and did.
type ConntrackReport struct {
	metav1.TypeMeta `json:",inline"`
	Node            string          `json:"node"`
	Applied         bool            `json:"applied"`
	Stale           []analysis.Flow `json:"stale"`
	Deleted         int             `json:"deleted"`
	Gone            int             `json:"gone"`
	Remaining       []analysis.Flow `json:"remaining"`
}

// NewConntrackReport returns an empty report with its type set.
func NewConntrackReport(node string, applied bool) *ConntrackReport {
	return &ConntrackReport{TypeMeta: analysis.NewTypeMeta("ConntrackReport"),
		Node: node, Applied: applied, Stale: []analysis.Flow{}, Remaining: []analysis.Flow{}}
}

// Fill copies a repair's results into the report.
func (r *ConntrackReport) Fill(rep *ConntrackRepair) {
	r.Stale = append(r.Stale, rep.Stale...)
	r.Remaining = append(r.Remaining, rep.Remaining...)
	r.Deleted, r.Gone = rep.Deleted, rep.Gone
}

// StaleFlows keeps the stale flows.
func StaleFlows(flows []analysis.Flow) []analysis.Flow {
	var out []analysis.Flow
	for _, f := range flows {
		if f.Status == analysis.FlowStale {
			out = append(out, f)
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object for the printers.
func (r *ConntrackReport) DeepCopyObject() runtime.Object {
	return analysis.DeepCopyReport(r, &ConntrackReport{})
}
