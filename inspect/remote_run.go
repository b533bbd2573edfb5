package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	utilexec "k8s.io/client-go/util/exec"
)

// RunOnNode runs svctrace with args in the agent's Pod on node, as the
// CLI would on the node itself, and returns its standard output and
// error and its exit code (a non-zero exit is no error: it is the
// command's answer).
func (r Remote) RunOnNode(ctx context.Context, node string, args ...string) (stdout, stderr string, code int, err error) {
	pod, err := r.AgentPod(ctx, node)
	if err != nil {
		return "", "", 0, err
	}
	out, errOut, err := r.exec(ctx, pod, AgentContainer, append([]string{AgentBinary}, args...), nil)
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		return string(out), string(errOut), exitErr.ExitStatus(), nil
	}
	if err != nil {
		return "", "", 0, fmt.Errorf("node %s: svctrace %s in Pod %s/%s: %w", node, strings.Join(args, " "), pod.Namespace, pod.Name, err)
	}
	return string(out), string(errOut), 0, nil
}
