package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/snapshot"
)

// FanOut says how many nodes are read at once and for how long each.
type FanOut struct {
	// Concurrency bounds the nodes read at once; Timeout bounds each
	// (0: no bound).
	Concurrency int
	Timeout     time.Duration
	// Progress, when set, is told how many nodes are done, of how many.
	Progress func(done, total int)
}

// ForEachNode calls read for every node, Concurrency at once, each with
// its own deadline.
func ForEachNode(ctx context.Context, nodes []string, o FanOut, read func(ctx context.Context, i int, node string)) {
	workers := max(1, min(o.Concurrency, len(nodes)))
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(nodes) {
					return
				}
				nctx, cancel := ctx, context.CancelFunc(func() {})
				if o.Timeout > 0 {
					nctx, cancel = context.WithTimeout(ctx, o.Timeout)
				}
				read(nctx, i, nodes[i])
				cancel()
				if o.Progress != nil {
					o.Progress(int(done.Add(1)), len(nodes))
				}
			}
		})
	}
	wg.Wait()
}

// NodeRead is one node's state read from a workstation, or why not.
type NodeRead struct {
	Node  string
	State snapshot.NodeState
	Notes []string
	Bytes int
	Err   error
}

// ReadNodes reads the kernel state of each node through its agent's Pod,
// or through a helper Pod when helper is set, keeping the conntrack
// entries to dst. kube-proxy's settings come from its /configz on the
// node, else from its ConfigMap. The agent Pods of several nodes are
// found with one LIST.
func (r Remote) ReadNodes(ctx context.Context, nodes []string, helper *Helper, dst []netip.Addr, o FanOut) []NodeRead {
	out := make([]NodeRead, len(nodes))
	var pods *AgentPods
	if helper == nil {
		pods = r.agentPodsOf(ctx, nodes)
	}
	ForEachNode(ctx, nodes, o, func(ctx context.Context, i int, node string) {
		out[i] = r.readNode(ctx, node, helper, pods, dst, o.Timeout)
		var unreachable *ErrAgentUnreachable
		if err := out[i].Err; err != nil && ctx.Err() == context.DeadlineExceeded && !errors.As(err, &unreachable) {
			out[i].Err = fmt.Errorf("%w (no answer within %v)", err, o.Timeout)
		}
	})
	return out
}

// readNode reads one node; pods are the agent Pods listed (nil with a
// helper).
func (r Remote) readNode(ctx context.Context, node string, helper *Helper, pods *AgentPods, dst []netip.Addr, timeout time.Duration) NodeRead {
	nr := NodeRead{Node: node}
	var pod *corev1.Pod
	container := AgentContainer
	switch {
	case helper != nil:
		p, stop, err := r.StartHelper(ctx, node, *helper)
		defer stop()
		if err != nil {
			nr.Err = err
			return nr
		}
		pod, container = p, HelperContainer
	default:
		p, err := pods.Of(node)
		if err != nil {
			nr.Err = err
			return nr
		}
		pod = p
	}
	nr.State, nr.Notes, nr.Bytes, nr.Err = r.NodeState(ctx, pod, container, node, dst)
	if nr.Err != nil && container == AgentContainer {
		nr.Err = r.AgentCallError(ctx, node, pod, timeout, nr.Err)
	}
	if nr.Err != nil || nr.State.KubeProxy.Source != "" {
		return nr
	}
	pc, note, err := ProxyConfigFromAPI(ctx, r.Client)
	if err != nil {
		nr.Err = err
		return nr
	}
	nr.State.KubeProxy = pc
	if note != "" {
		nr.Notes = append(nr.Notes, note)
	}
	return nr
}
