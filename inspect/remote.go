package inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/svctrace/svctrace/nodeapi"
	"github.com/svctrace/svctrace/snapshot"
)

// From a workstation, a node's state is read from the node agent
// (deploy/agent.yaml) through its API (package nodeapi): the agent
// authenticates the caller and asks the API server whether they may read
// (or repair) the node, so reading needs no pods/exec. A helper Pod
// (--helper-pod), where no agent runs, is read with exec through the API
// server as kubectl exec does.

// Where the agent runs, as deploy/agent.yaml deploys it.
const (
	AgentNamespace = "svctrace"
	AgentSelector  = "app.kubernetes.io/name=svctrace,app.kubernetes.io/component=agent"
	AgentContainer = "agent"
	// AgentBinary is svctrace's binary in its image.
	AgentBinary = "kubectl-svctrace"
)

// Remote reads nodes' state through Pods on them.
type Remote struct {
	Config *rest.Config
	Client kubernetes.Interface
}

// ErrNoAgent is the error of a node without a running agent Pod.
type ErrNoAgent struct {
	Node, Why string
	// Replacing: its DaemonSet is replacing the agent's Pod (one Pod
	// ends or is deleted, another is pending): the agent is deployed,
	// and will answer in a moment.
	Replacing bool
}

func (e *ErrNoAgent) Error() string {
	if e.Replacing {
		return fmt.Sprintf("node %s: %s: the agent is being replaced; try again in a moment", e.Node, e.Why)
	}
	return fmt.Sprintf("node %s: %s; deploy the agent (kubectl apply -f deploy/, see docs/cluster.md), or read the node on it with --local", e.Node, e.Why)
}

// AgentPod is the running agent Pod on node, found with a LIST of that
// node's agent Pods (a fan-out over many nodes lists them all once:
// ListAgentPods).
func (r Remote) AgentPod(ctx context.Context, node string) (*corev1.Pod, error) {
	return r.agentPodsOf(ctx, []string{node}).Of(node)
}

// agentListError is the error of node when the agent's Pods could not be
// listed.
func agentListError(node string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("node %s: cannot list the agent's Pods in namespace %s (forbidden by RBAC: the CLI needs get and list of pods there; the svctrace-user roles of deploy/cli-rbac.yaml have it): %w", node, AgentNamespace, err)
	}
	return fmt.Errorf("node %s: finding the agent's Pod: %w", node, err)
}

// runningAgent is the running Pod among node's agent Pods (in the API
// server's order), or why none runs.
func runningAgent(node string, pods []*corev1.Pod) (*corev1.Pod, error) {
	var states []string
	replacing := false
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p, nil
		}
		state := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			state = "terminating"
		}
		// A Pod that is pending or going, beside another, is a
		// DaemonSet's replacement under way; a lone one that ended is
		// not.
		replacing = replacing || p.Status.Phase == corev1.PodPending || p.DeletionTimestamp != nil
		states = append(states, fmt.Sprintf("Pod %s is %s", p.Name, state))
	}
	if len(states) == 0 {
		return nil, &ErrNoAgent{Node: node, Why: fmt.Sprintf("no svctrace agent Pod runs there (namespace %s, labels %s)", AgentNamespace, AgentSelector)}
	}
	return nil, &ErrNoAgent{Node: node, Why: "its agent " + strings.Join(states, ", "), Replacing: replacing}
}

// Exec runs argv in a container of a Pod, with stdin, and returns its
// standard output; a failure carries its standard error.
func (r Remote) Exec(ctx context.Context, pod *corev1.Pod, container string, argv []string, stdin io.Reader) ([]byte, error) {
	out, errOut, err := r.exec(ctx, pod, container, argv, stdin)
	if err != nil {
		msg := strings.TrimSpace(string(errOut))
		// A refused upgrade carries the API's message, not its status.
		if apierrors.IsForbidden(err) || strings.Contains(err.Error(), "is forbidden") {
			return nil, fmt.Errorf("exec in Pod %s/%s is forbidden by RBAC (the CLI needs create of pods/exec there; deploy/cli-rbac.yaml has the roles): %w", pod.Namespace, pod.Name, err)
		}
		if msg != "" {
			return nil, fmt.Errorf("%s in Pod %s/%s: %w: %s", strings.Join(argv, " "), pod.Namespace, pod.Name, err, msg)
		}
		return nil, fmt.Errorf("%s in Pod %s/%s: %w", strings.Join(argv, " "), pod.Namespace, pod.Name, err)
	}
	return out, nil
}

// exec runs argv in a container and returns its standard output and
// error; a non-zero exit is an error that is a utilexec.ExitError.
func (r Remote) exec(ctx context.Context, pod *corev1.Pod, container string, argv []string, stdin io.Reader) ([]byte, []byte, error) {
	req := r.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(r.Config, "GET", req.URL().String())
	if err != nil {
		return nil, nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return nil, nil, err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, nil, err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	return stdout.Bytes(), stderr.Bytes(), err
}

// NodeState reads the kernel state of the node a Pod runs on, as
// CollectLocal does there (svctrace's node-state command), keeping the
// conntrack entries to the addresses dst; bytes is how much was read. The
// agent's Pod is asked through its API; a helper Pod runs the command
// through exec.
func (r Remote) NodeState(ctx context.Context, pod *corev1.Pod, container, node string, dst []netip.Addr) (snapshot.NodeState, []string, int, error) {
	var out []byte
	var err error
	if container == AgentContainer {
		out, err = r.agentNodeState(ctx, pod, dst)
	} else {
		var in strings.Builder
		for _, a := range dst {
			in.WriteString(a.String())
			in.WriteByte('\n')
		}
		out, err = r.Exec(ctx, pod, container, []string{AgentBinary, "node-state", "--node", node, "--conntrack-dst-stdin"}, strings.NewReader(in.String()))
	}
	if err != nil {
		return snapshot.NodeState{}, nil, 0, fmt.Errorf("node %s: reading its state: %w", node, err)
	}
	s, err := snapshot.Decode(out)
	if err != nil {
		return snapshot.NodeState{}, nil, len(out), fmt.Errorf("node %s: the state Pod %s/%s sent: %w", node, pod.Namespace, pod.Name, err)
	}
	if len(s.Nodes) != 1 || s.Nodes[0].Name != node {
		return snapshot.NodeState{}, nil, len(out), fmt.Errorf("node %s: Pod %s/%s sent the state of %d nodes, not of %s", node, pod.Namespace, pod.Name, len(s.Nodes), node)
	}
	return s.Nodes[0], s.Metadata.Notes, len(out), nil
}

func (r Remote) agentNodeState(ctx context.Context, pod *corev1.Pod, dst []netip.Addr) ([]byte, error) {
	c, err := nodeapi.NewNodeClient(r.Config, pod)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(dst))
	for i, a := range dst {
		addrs[i] = a.String()
	}
	return c.NodeState(ctx, addrs)
}

// AgentNodes are the nodes agent Pods run on, sorted.
func (r Remote) AgentNodes(ctx context.Context) ([]string, error) {
	pods, err := r.Client.CoreV1().Pods(AgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: AgentSelector})
	if err != nil {
		return nil, fmt.Errorf("listing the agent's Pods in namespace %s: %w", AgentNamespace, err)
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes, nil
}
