// Package trace holds the reports svctrace prints: the path of a packet
// through a node's rules (trace), the paths of every frontend of a Service
// with the API-side causes of trouble (explain), and their rendering.
package trace

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// ExplainReport is the path of every frontend of a Service on a node.
type ExplainReport struct {
	metav1.TypeMeta `json:",inline"`
	Service         string `json:"service"`
	Node            string `json:"node"`
	// Mode is the data plane read (iptables).
	Mode string `json:"mode,omitempty"`
	// Skipped explains a Service that gets no node rules (headless,
	// ExternalName).
	Skipped   string              `json:"skipped,omitempty"`
	Frontends []behavior.Frontend `json:"frontends,omitempty"`
	// Pods names the Pod behind each endpoint ("ip:port" -> ns/name).
	Pods   map[string]string `json:"pods,omitempty"`
	Causes []model.Cause     `json:"causes,omitempty"`
	// Conntrack sums up the live connections per frontend and backend,
	// when the snapshot holds the conntrack table.
	Conntrack []FlowCount        `json:"conntrack,omitempty"`
	Findings  []behavior.Finding `json:"findings,omitempty"`
	Notes     []string           `json:"notes,omitempty"`
}

// FlowCount is the number of conntrack entries of one frontend and
// backend, by status (ok, stale, draining, untranslated, closed).
type FlowCount struct {
	Frontend string         `json:"frontend"`
	Backend  string         `json:"backend"`
	Counts   map[string]int `json:"counts"`
}

// TraceReport is every way one packet can go through a node's rules.
type TraceReport struct {
	metav1.TypeMeta `json:",inline"`
	Node            string   `json:"node"`
	Mode            string   `json:"mode,omitempty"`
	Packet          string   `json:"packet"`
	Branches        []Branch `json:"branches"`
	Notes           []string `json:"notes,omitempty"`
}

// Branch is one path with its probability.
type Branch struct {
	Probability float64 `json:"probability"`
	// Verdict: forward (DNAT), accept (untouched), reject, drop, redirect.
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason,omitempty"`
	DNAT       string `json:"dnat,omitempty"`
	Masquerade bool   `json:"masquerade"`
	Service    string `json:"service,omitempty"`
	Pod        string `json:"pod,omitempty"`
	// Affinity: the client is pinned to this backend for this many
	// seconds, in the record AffinityKey (pass it to --affinity to trace
	// the client's next connection).
	AffinitySeconds int32    `json:"affinitySeconds,omitempty"`
	AffinityKey     string   `json:"affinityKey,omitempty"`
	Hops            []Hop    `json:"hops"`
	Notes           []string `json:"notes,omitempty"`
}

// Hop is one rule on a path.
type Hop struct {
	Table       string  `json:"table"`
	Chain       string  `json:"chain"`
	Line        int     `json:"line,omitempty"`
	Rule        string  `json:"rule"`
	Element     string  `json:"element,omitempty"`
	Probability float64 `json:"probability,omitempty"`
	// Service is the Service port the rule belongs to, when its plane can
	// tell; Shared marks plumbing every path goes through; ByLine says
	// Line is a line of the dump rather than a rule handle.
	Service  string `json:"service,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Shared   bool   `json:"shared,omitempty"`
	ByLine   bool   `json:"byLine,omitempty"`
}

// DeepCopyObject implements runtime.Object for the printers.
func (r *ExplainReport) DeepCopyObject() runtime.Object {
	return analysis.DeepCopyReport(r, &ExplainReport{})
}

// DeepCopyObject implements runtime.Object for the printers.
func (r *TraceReport) DeepCopyObject() runtime.Object {
	return analysis.DeepCopyReport(r, &TraceReport{})
}

// NewTypeMeta returns the TypeMeta of a report kind.
func NewTypeMeta(kind string) metav1.TypeMeta { return analysis.NewTypeMeta(kind) }
