package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/nodeapi"
)

// ErrAgentUnreachable is the error of a node whose agent Pod is there but
// whose API did not answer. Every path that calls a node's agent (drift
// --all-nodes's reports, the node states of --node and --all-nodes) gives
// this one error, naming the node, the Pod, its address, the bound that
// ran out and what to check.
type ErrAgentUnreachable struct {
	Node string
	// Pod is the agent's Pod (namespace/name), Addr the address called.
	Pod, Addr string
	// Within is the bound that ran out, with its flag ("1m0s
	// (--node-timeout)"); empty when the call failed by itself (Cause).
	Within string
	// Cause is the network's error, when no bound of the CLI's ran out
	// (a connection refused, a handshake that timed out).
	Cause string
	// Refused: the connection was refused or had no route; else the
	// agent's address took the call and did not answer.
	Refused bool
	Err     error
}

func (e *ErrAgentUnreachable) Error() string {
	what := "no answer from its agent Pod " + e.Pod + " at " + e.Addr
	switch {
	case e.Within != "":
		what += " within " + e.Within
	case e.Refused:
		what = fmt.Sprintf("cannot reach its agent Pod %s at %s (%s)", e.Pod, e.Addr, e.Cause)
	default:
		what += " (" + e.Cause + ")"
	}
	ns, name, _ := strings.Cut(e.Pod, "/")
	return fmt.Sprintf("node %s: %s: check that this machine reaches %s (a firewall, security group or network policy between them must let TCP through) and that the agent runs (kubectl -n %s logs %s)",
		e.Node, what, e.Addr, ns, name)
}

func (e *ErrAgentUnreachable) Unwrap() error { return e.Err }

// AgentCallError is err, the failure of a call to node's agent in pod,
// as an ErrAgentUnreachable where the agent did not answer: ctx's
// deadline (nodeTimeout, --node-timeout) or the kubeconfig's Timeout
// (--request-timeout) ran out, or the connection failed. Any other
// error (the agent refused the caller, a bad answer) is returned as it
// is.
func (r Remote) AgentCallError(ctx context.Context, node string, pod *corev1.Pod, nodeTimeout time.Duration, err error) error {
	if err == nil {
		return nil
	}
	e := &ErrAgentUnreachable{Node: node, Pod: pod.Namespace + "/" + pod.Name, Err: err}
	// Empty only where no client could be made for the Pod.
	e.Addr, _ = nodeapi.Address(pod)
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Within = "the command's deadline"
		if nodeTimeout > 0 {
			e.Within = fmt.Sprintf("%v (--node-timeout)", nodeTimeout)
		}
	case errors.Is(err, context.DeadlineExceeded) && r.Config != nil && r.Config.Timeout > 0:
		// net/http's Client.Timeout is a DeadlineExceeded of its own.
		e.Within = fmt.Sprintf("%v (--request-timeout)", r.Config.Timeout)
	case errors.As(err, &op) && op.Op == "dial" && !op.Timeout():
		e.Cause, e.Refused = op.Error(), true
	case errors.As(err, &ne) && ne.Timeout():
		e.Cause = ne.Error()
	default:
		return err
	}
	return e
}
