// Package fleet is the fleet-scale benchmark's harness (issue 37): many
// real node agent APIs (package nodeapi, with the real Auth against a real
// API server) in one process, each serving a real agent report.
package fleet

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// Report is the report an agent on node would send after checking the
// node kept in a snapshot (a real capture of a lab node): the agent's own
// analysis (analysis.Drift with the behaviour digest, as its check runs
// it) on that node's kernel state and the snapshot's objects, its findings
// all settled (drift, none pending).
func Report(snapshotFile, snapshotNode string) (agent.Report, error) {
	s, err := snapshot.Load(snapshotFile)
	if err != nil {
		return agent.Report{}, fmt.Errorf("the fleet's snapshot: %w", err)
	}
	var keep []snapshot.NodeState
	for _, n := range s.Nodes {
		if n.Name == snapshotNode {
			keep = append(keep, n)
		}
	}
	if len(keep) == 0 {
		return agent.Report{}, fmt.Errorf("snapshot %s holds no node %s", snapshotFile, snapshotNode)
	}
	s.Nodes = keep
	checked := time.Now()
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Digest: true})
	if err != nil {
		return agent.Report{}, fmt.Errorf("checking node %s of %s: %w", snapshotNode, snapshotFile, err)
	}
	rep := agent.Report{Node: snapshotNode, CheckedAt: checked, Ready: true, Version: keep[0].KubeProxy.Version,
		Drift: append([]behavior.Finding{}, r.Findings...), Pending: []behavior.Finding{}, Notes: r.Notes}
	for _, n := range r.Nodes {
		rep.Frontends += n.Frontends
		rep.Mode, rep.Backend = n.Mode, n.Backend
		rep.Behaviour, rep.ServiceFrontends = n.Behaviour, n.ServiceFrontends
	}
	return rep, nil
}

// ReportFor is rep as the agent on node sends it (JSON).
func ReportFor(rep agent.Report, node string) ([]byte, error) {
	rep.Node = node
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("the report of node %s: %w", node, err)
	}
	return b, nil
}
