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
	// Scope is what the report is about when it is less than every
	// Service the nodes' rules are for: "namespace NAME".
	Scope    string             `json:"scope,omitempty"`
	Nodes    []NodeSummary      `json:"nodes"`
	Findings []behavior.Finding `json:"findings"`
	Notes    []string           `json:"notes,omitempty"`
}

// NodeSummary says what was checked on a node.
type NodeSummary struct {
	Name string `json:"name"`
	Mode string `json:"mode,omitempty"`
	// Backend is the kernel backend of the rules checked (iptables:
	// legacy or nf_tables), when the plane has several.
	Backend   string   `json:"backend,omitempty"`
	Frontends int      `json:"frontends"`
	Findings  int      `json:"findings"`
	Inferred  []string `json:"inferred,omitempty"`
	// Excerpt says why the node's state is only an excerpt of its rules
	// (a dump pasted in a ticket): its findings are only what it shows.
	Excerpt string `json:"excerpt,omitempty"`
	// Pending counts the differences that wait for kube-proxy's next
	// sync (a node agent's report), which are not drift.
	Pending int `json:"pending,omitempty"`
	// PendingWhy says why they are not drift yet: PendingQueued or
	// PendingUnconfirmed.
	PendingWhy string `json:"pendingWhy,omitempty"`
	// CheckedAt is when the node was checked, when that was before this
	// report (by its agent), and CheckAge how long before.
	CheckedAt *metav1.Time `json:"checkedAt,omitempty"`
	CheckAge  string       `json:"checkAge,omitempty"`
	// RulesReadAt, when set, is when the agent last read the node's rules:
	// its check at CheckedAt found the kernel's digest unchanged since,
	// and RulesReadAge how long before this report that was.
	RulesReadAt  *metav1.Time `json:"rulesReadAt,omitempty"`
	RulesReadAge string       `json:"rulesReadAge,omitempty"`
	// Behaviour is the node's behaviour digest (DriftOptions.Digest).
	Behaviour []FrontendDigest `json:"behaviour,omitempty"`
	// ServiceFrontends counts the frontends of each Service port
	// (DriftOptions.Digest): a report over the nodes' agents counts the
	// ones of its scope from it.
	ServiceFrontends map[string]int `json:"serviceFrontends,omitempty"`
	// BytesRead is how much was read from the node (from its agent).
	BytesRead int `json:"bytesRead,omitempty"`
	// Error is why the node could not be read (its other fields are then
	// empty).
	Error string `json:"error,omitempty"`
}

// Why differences wait (NodeSummary.PendingWhy).
const (
	// PendingQueued: kube-proxy has a change queued that no sync has
	// applied yet.
	PendingQueued = "waiting for kube-proxy's next sync"
	// PendingUnconfirmed: kube-proxy has nothing queued, but synced a
	// moment ago or has not learnt of the change yet; the agent checks
	// again shortly before it calls them drift.
	PendingUnconfirmed = "to be confirmed by the agent's next check"
)

// NewDriftReport returns an empty report with its type set.
func NewDriftReport() *DriftReport {
	return &DriftReport{TypeMeta: NewTypeMeta("DriftReport"), Findings: []behavior.Finding{}}
}

// DeepCopyObject implements runtime.Object for the printers.
func (r *DriftReport) DeepCopyObject() runtime.Object { return DeepCopyReport(r, &DriftReport{}) }

// GroupVersion is the apiVersion of svctrace's report objects.
const GroupVersion = "svctrace.dev/v1alpha1"

// NewTypeMeta returns the TypeMeta of a report kind.
func NewTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: GroupVersion, Kind: kind}
}

// DeepCopyReport is the DeepCopyObject of a report type: in copied into
// out, a new zero value of the same type, by a JSON round trip. Report
// types hold only plain data, so the round trip cannot fail; were it to,
// in itself is returned.
func DeepCopyReport[T runtime.Object](in, out T) runtime.Object {
	b, err := json.Marshal(in)
	if err != nil {
		return in
	}
	if err := json.Unmarshal(b, out); err != nil {
		return in
	}
	return out
}
