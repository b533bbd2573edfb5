package inspect

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/nodeapi"
)

// The repairs a workstation asks a node's agent for, through its API: the
// agent runs them only for a caller the API server lets update the node's
// nodes/svctrace (the svctrace-repair role).

// ApplyRules asks the agent on node for reconcile rules --apply, and
// returns what it printed and its exit code (a non-zero exit is no error:
// it is the command's answer).
func (r Remote) ApplyRules(ctx context.Context, node string, req nodeapi.RulesRequest) (nodeapi.RunResult, error) {
	return r.runOnAgent(ctx, node, func(c *nodeapi.NodeClient) (nodeapi.RunResult, error) {
		return c.Rules(ctx, req)
	})
}

// ApplyConntrack asks the agent on node for reconcile conntrack --apply.
func (r Remote) ApplyConntrack(ctx context.Context, node string) (nodeapi.RunResult, error) {
	return r.runOnAgent(ctx, node, func(c *nodeapi.NodeClient) (nodeapi.RunResult, error) {
		return c.Conntrack(ctx)
	})
}

// RollbackRules asks the agent on node for reconcile rollback of a backup
// kept there.
func (r Remote) RollbackRules(ctx context.Context, node, backup string) (nodeapi.RunResult, error) {
	return r.runOnAgent(ctx, node, func(c *nodeapi.NodeClient) (nodeapi.RunResult, error) {
		return c.Rollback(ctx, nodeapi.RollbackRequest{Backup: backup})
	})
}

// AgentReport asks the agent in pod for its report (JSON).
func (r Remote) AgentReport(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	c, err := nodeapi.NewNodeClient(r.Config, pod)
	if err != nil {
		return nil, err
	}
	return c.Report(ctx)
}

// runOnAgent makes call to the agent on node; an agent that does not
// answer is the one error every path to an agent gives.
func (r Remote) runOnAgent(ctx context.Context, node string, call func(*nodeapi.NodeClient) (nodeapi.RunResult, error)) (nodeapi.RunResult, error) {
	pod, err := r.AgentPod(ctx, node)
	if err != nil {
		return nodeapi.RunResult{}, err
	}
	c, err := nodeapi.NewNodeClient(r.Config, pod)
	if err != nil {
		return nodeapi.RunResult{}, fmt.Errorf("node %s: %w", node, err)
	}
	res, err := call(c)
	return res, r.AgentCallError(ctx, node, pod, 0, err)
}
