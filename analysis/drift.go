package analysis

import (
	"errors"
	"fmt"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// DriftOptions say which nodes, family and part of them a drift report
// covers.
type DriftOptions struct {
	// Nodes to check; none means every node of the snapshot.
	Nodes  []string
	Family string
	Scope  Scope
	// Models are views of nodes started before their kernel state was
	// read (PrepareModel); a node without one gets its view built.
	Models []*Model
	// Digest puts each node's behaviour digest in its summary (the
	// agent's report carries it, for comparing nodes).
	Digest bool
	// Memo, when set, keeps each node's observation for the next check
	// with the same Memo (a node agent's), which walks again only the
	// Services whose walks read something that changed (see Memo).
	Memo *Memo
}

// ErrNoNodeState is returned for a snapshot that holds no node's kernel
// state: there is nothing to compare.
var ErrNoNodeState = errors.New("holds no node state: nothing to check (collect one with collect --node N)")

// Drift checks the nodes of a snapshot and reports the findings in scope,
// with a summary per node. It is the one entry point for a drift report:
// the CLI, the agent and the TUI call it.
func Drift(s *snapshot.Snapshot, o DriftOptions) (*DriftReport, error) {
	if len(s.Nodes) == 0 {
		return nil, ErrNoNodeState
	}
	scope, err := o.Scope.resolve(s.Cluster)
	if err != nil {
		return nil, err
	}
	nodes := o.Nodes
	if len(nodes) == 0 {
		for _, n := range s.Nodes {
			nodes = append(nodes, n.Name)
		}
	}
	r := NewDriftReport()
	r.Scope = scope.String()
	r.Notes = append(r.Notes, s.Metadata.Notes...)
	var seen []NodeFindings
	for _, n := range nodes {
		// AnalyzeWith uses the node's prepared view if it fits the
		// node's release, and builds its own if not.
		opts := Options{Lean: true, memo: o.Memo.of(n, o.Family)}
		for _, m := range o.Models {
			if m.of(s.Cluster, n, o.Family) {
				opts.Model = m
			}
		}
		a, err := AnalyzeWith(s, n, o.Family, opts)
		if err != nil {
			return nil, err
		}
		if a.Unchecked != "" {
			// "No drift" would be a guess.
			return nil, fmt.Errorf("node %s: %s", n, a.Unchecked)
		}
		if scope.Service != nil && a.Expected == nil {
			if err := scope.Service.checkNamedInRules(a.Observed); err != nil {
				return nil, fmt.Errorf("node %s: %w", n, err)
			}
		}
		var fs []behavior.Finding
		for _, f := range a.Findings {
			if scope.Wants(f.Service) {
				fs = append(fs, f)
			}
		}
		frontends := 0
		for _, f := range a.Observed.Frontends {
			if scope.Wants(f.Service) {
				frontends++
			}
		}
		r.Findings = append(r.Findings, fs...)
		sum := NodeSummary{Name: n, Mode: a.Config.Mode, Frontends: frontends, Findings: len(fs), Inferred: a.Config.Inferred}
		if b, ok := a.Plane.(dataplane.BackendNamer); ok {
			sum.Backend = b.Backend()
		}
		if e, ok := a.Plane.(dataplane.Excerpter); ok {
			sum.Excerpt = e.Excerpt()
		}
		nf := NodeFindings{Node: n, Mode: sum.Mode, Backend: sum.Backend, Version: a.Config.Version}
		if o.Digest || len(nodes) > 1 {
			nf.Behaviour = digests(a)
		}
		if o.Digest {
			sum.Behaviour = nf.Behaviour
			sum.ServiceFrontends = map[string]int{}
			for _, f := range a.Observed.Frontends {
				sum.ServiceFrontends[f.Service]++
			}
		}
		r.Nodes = append(r.Nodes, sum)
		seen = append(seen, nf)
		for _, note := range a.Notes {
			r.Notes = append(r.Notes, fmt.Sprintf("node %s: %s", n, note))
		}
		if a.Expected == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("node %s: no API objects, only text-level checks ran", n))
		}
	}
	r.Notes = append(r.Notes, consistency(seen)...)
	r.Notes = append(r.Notes, crossNode(seen)...)
	return r, nil
}
