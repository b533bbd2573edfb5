package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
)

// NodeReport is one node's agent report as the CLI read it, or why it could
// not be read.
type NodeReport struct {
	Node   string
	Report Report
	// Bytes is how much was read from the node.
	Bytes int
	Err   error
}

// ReadReports asks the agent on each node for its report, through its
// authenticated API (the caller needs get of nodes/svctrace), many nodes at
// once. The agent Pods of all nodes are found with one LIST, so the API
// server's load does not grow with the nodes.
// A node that cannot be read has its error, and the others are read.
func ReadReports(ctx context.Context, r inspect.Remote, nodes []string, o inspect.FanOut) []NodeReport {
	out := make([]NodeReport, len(nodes))
	pods := r.ListAgentPods(ctx)
	inspect.ForEachNode(ctx, nodes, o, func(ctx context.Context, i int, node string) {
		out[i] = readReport(ctx, r, pods, node, o.Timeout)
	})
	return out
}

func readReport(ctx context.Context, r inspect.Remote, pods *inspect.AgentPods, node string, timeout time.Duration) NodeReport {
	nr := NodeReport{Node: node}
	pod, err := pods.Of(node)
	if err != nil {
		nr.Err = err
		return nr
	}
	data, err := r.AgentReport(ctx, pod)
	nr.Bytes = len(data)
	if err != nil {
		nr.Err = r.AgentCallError(ctx, node, pod, timeout, err)
		return nr
	}
	if err := json.Unmarshal(data, &nr.Report); err != nil {
		nr.Err = fmt.Errorf("the report of agent Pod %s: %w", pod.Name, err)
		return nr
	}
	if !nr.Report.Ready {
		why := "it has not checked the node yet"
		if nr.Report.Error != "" {
			why = "its checks fail: " + nr.Report.Error
		}
		nr.Err = fmt.Errorf("the agent Pod %s is not ready: %s", pod.Name, why)
	}
	return nr
}

// Findings is the node's report as the drift report takes it.
func (n NodeReport) Findings() analysis.NodeFindings {
	f := analysis.NodeFindings{Node: n.Node, Err: n.Err, BytesRead: n.Bytes}
	if n.Err != nil {
		return f
	}
	r := n.Report
	f.Mode, f.Backend, f.Version, f.Frontends, f.Drift, f.Pending = r.Mode, r.Backend, r.Version, r.Frontends, r.Drift, len(r.Pending)
	f.CheckedAt, f.ReadAt, f.PendingQueued = r.CheckedAt, r.RulesReadAt, r.KubeProxyWaiting
	f.Behaviour, f.ServiceFrontends = r.Behaviour, r.ServiceFrontends
	f.Notes = append(f.Notes, r.Notes...)
	if r.Error != "" {
		f.Notes = append(f.Notes, fmt.Sprintf("the agent's last check failed (%s): its findings are from %s", r.Error, r.CheckedAt.Format(time.RFC3339)))
	}
	if r.KubeProxyStalled {
		f.Notes = append(f.Notes, fmt.Sprintf("kube-proxy has left changes waiting for %v without a successful sync", r.KubeProxyLag.Round(time.Second)))
	}
	return f
}
