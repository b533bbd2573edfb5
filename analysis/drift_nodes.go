package analysis

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// NodeFindings is what a node's agent found (see the agent's report), or
// why the node could not be read.
type NodeFindings struct {
	Node    string
	Mode    string
	Backend string
	// Version is kube-proxy's version on the node, when known.
	Version   string
	Frontends int
	// Drift are the findings that outlived kube-proxy's sync; Pending
	// (kube-proxy's lag) are counted, not reported as drift.
	Drift   []behavior.Finding
	Pending int
	// PendingQueued says kube-proxy had a change queued: Pending is its
	// lag. Otherwise the agent confirms them at its next check.
	PendingQueued bool
	// CheckedAt is when the agent's check started; ReadAt, when set, when
	// the rules were last read (the check found the kernel's digest
	// unchanged since).
	CheckedAt, ReadAt time.Time
	// ServiceFrontends counts each Service port's frontends (nil: not
	// known; Frontends counts them all).
	ServiceFrontends map[string]int
	Notes            []string
	// BytesRead is how much was read from the node.
	BytesRead int
	// Behaviour is the digest of the node's behaviour, to compare it
	// with the other nodes' (nil: not known).
	Behaviour []FrontendDigest
	// Err is why the node could not be read.
	Err error
}

// DriftOfNodes is the drift report of nodes that were checked where they
// run (each by its agent), for the scope: c holds the API objects, to
// resolve the scope (a Service or namespace that does not exist is an
// error with close matches, never "no drift"). A node that could not be
// read is in the report with its error, and every other node is reported.
func DriftOfNodes(c *snapshot.Cluster, o DriftOptions, nodes []NodeFindings) (*DriftReport, error) {
	scope, err := o.Scope.resolve(c)
	if err == nil && c == nil {
		err = scope.namespaceError(namespaceInReports(scope.Namespace, nodes))
	}
	if err != nil {
		return nil, err
	}
	r := NewDriftReport()
	r.Scope = scope.String()
	now := time.Now()
	for _, n := range nodes {
		sum := NodeSummary{Name: n.Node, Mode: n.Mode, Backend: n.Backend, BytesRead: n.BytesRead}
		if n.Err != nil {
			sum.Error = n.Err.Error()
			r.Nodes = append(r.Nodes, sum)
			continue
		}
		sum.Frontends, sum.Pending = n.Frontends, n.Pending
		if n.ServiceFrontends != nil && (scope.Service != nil || scope.Namespace != "") {
			sum.Frontends = 0
			for spn, k := range n.ServiceFrontends {
				if scope.Wants(spn) {
					sum.Frontends += k
				}
			}
		}
		if n.Pending > 0 {
			sum.PendingWhy = PendingUnconfirmed
			if n.PendingQueued {
				sum.PendingWhy = PendingQueued
			}
		}
		if !n.CheckedAt.IsZero() {
			sum.CheckedAt = &metav1.Time{Time: n.CheckedAt}
			sum.CheckAge = now.Sub(n.CheckedAt).Round(100 * time.Millisecond).String()
		}
		if !n.ReadAt.IsZero() {
			sum.RulesReadAt = &metav1.Time{Time: n.ReadAt}
			sum.RulesReadAge = now.Sub(n.ReadAt).Round(time.Second).String()
		}
		for _, f := range n.Drift {
			if scope.Wants(f.Service) {
				r.Findings = append(r.Findings, f)
				sum.Findings++
			}
		}
		r.Nodes = append(r.Nodes, sum)
		for _, note := range n.Notes {
			r.Notes = append(r.Notes, fmt.Sprintf("node %s: %s", n.Node, note))
		}
	}
	r.Findings = behavior.Merge(r.Findings)
	r.Notes = append(r.Notes, consistency(nodes)...)
	r.Notes = append(r.Notes, crossNode(nodes)...)
	return r, nil
}

// Unreadable are the nodes of the report that could not be read.
func (r *DriftReport) Unreadable() []string {
	var out []string
	for _, n := range r.Nodes {
		if n.Error != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

// namespaceInReports checks, without the API objects, that the agents'
// reports know a Service in namespace ns: a typo is an error with the close
// matches. Reports that do not count their Services prove nothing either
// way.
func namespaceInReports(ns string, nodes []NodeFindings) error {
	if ns == "" {
		return nil
	}
	var all []string
	known := false
	for _, n := range nodes {
		known = known || n.ServiceFrontends != nil
		for spn := range n.ServiceFrontends {
			all = append(all, model.ParseServicePortName(spn).Namespace)
		}
	}
	if !known {
		return nil
	}
	return namespaceAmong(ns, all, " on the nodes read")
}
