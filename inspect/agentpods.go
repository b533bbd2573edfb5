package inspect

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AgentPods are the agent Pods of every node, from one LIST: a fan-out
// over a thousand nodes asks the API server once, not once per node.
type AgentPods struct {
	byNode map[string][]*corev1.Pod
	// err is why the Pods could not be listed: every node has it.
	err error
}

// ListAgentPods lists the agent Pods of all nodes at once (the agent's
// namespace and labels, no field selector). A failed LIST is kept, and
// each node gets it as AgentPod would give it.
func (r Remote) ListAgentPods(ctx context.Context) *AgentPods {
	return r.listAgentPods(ctx, "")
}

// agentPodsOf lists the agent Pods of nodes: with a field selector for a
// single node, else those of every node.
func (r Remote) agentPodsOf(ctx context.Context, nodes []string) *AgentPods {
	if len(nodes) == 1 {
		return r.listAgentPods(ctx, "spec.nodeName="+nodes[0])
	}
	return r.ListAgentPods(ctx)
}

func (r Remote) listAgentPods(ctx context.Context, fieldSelector string) *AgentPods {
	pods, err := r.Client.CoreV1().Pods(AgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: AgentSelector, FieldSelector: fieldSelector})
	if err != nil {
		return &AgentPods{err: err}
	}
	a := &AgentPods{byNode: map[string][]*corev1.Pod{}}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" {
			a.byNode[p.Spec.NodeName] = append(a.byNode[p.Spec.NodeName], p)
		}
	}
	return a
}

// Of is node's running agent Pod, or the error AgentPod gives for it (no
// agent, one being replaced, one that ended, a LIST forbidden).
func (a *AgentPods) Of(node string) (*corev1.Pod, error) {
	if a.err != nil {
		return nil, agentListError(node, a.err)
	}
	return runningAgent(node, a.byNode[node])
}
