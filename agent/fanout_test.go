package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/internal/silentlistener"
	"github.com/svctrace/svctrace/nodeapi"
)

func fleetPod(node, name, ip string, port int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: inspect.AgentNamespace, Name: name,
		Labels:      map[string]string{"app.kubernetes.io/name": "svctrace", "app.kubernetes.io/component": "agent"},
		Annotations: map[string]string{nodeapi.CertAnnotation: "00", nodeapi.PortAnnotation: strconv.Itoa(port)}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// TestReadReportsOneList: reading 1,000 nodes' reports finds their agent
// Pods with one LIST, not one per node (each node's call then fails at
// once: its Pod publishes no address).
func TestReadReportsOneList(t *testing.T) {
	const nodes = 1000
	var objs []runtime.Object
	names := make([]string, nodes)
	for i := range nodes {
		names[i] = fmt.Sprintf("node%d", i)
		p := fleetPod(names[i], fmt.Sprintf("agent-%d", i), "", 1)
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	reports := ReadReports(context.Background(), inspect.Remote{Config: &rest.Config{BearerToken: "t"}, Client: cs}, names, inspect.FanOut{Concurrency: 16, Timeout: time.Minute})
	for i, r := range reports {
		if r.Node != names[i] || r.Err == nil || !strings.Contains(r.Err.Error(), fmt.Sprintf("agent-%d has no address", i)) {
			t.Fatalf("node %s: %+v", names[i], r)
		}
	}
	lists := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d LISTs of Pods for %d nodes, want 1", lists, nodes)
	}
}

// silentAgent accepts connections and never answers; it returns its port.
func silentAgent(t *testing.T) int {
	addr, err := silentlistener.Listen(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return addr.(*net.TCPAddr).Port
}

// closedPort is a port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestUnreachableAgentOneMessage: a node whose agent Pod is there but
// does not answer gives one message whether its report is read (drift
// --all-nodes) or its state (--node, explain and collect --all-nodes),
// whichever bound runs out: it names the node, the Pod, the address, the
// bound with its flag, and what to check.
func TestUnreachableAgentOneMessage(t *testing.T) {
	silent, closed := silentAgent(t), closedPort(t)
	for _, c := range []struct {
		name        string
		port        int
		nodeTimeout time.Duration
		reqTimeout  time.Duration
		want        string
	}{
		{"node timeout", silent, 300 * time.Millisecond, 0, "no answer from its agent Pod svctrace/agent-a at 127.0.0.1:%d within 300ms (--node-timeout)"},
		{"request timeout", silent, time.Minute, 300 * time.Millisecond, "no answer from its agent Pod svctrace/agent-a at 127.0.0.1:%d within 300ms (--request-timeout)"},
		{"refused", closed, time.Minute, 0, "cannot reach its agent Pod svctrace/agent-a at 127.0.0.1:%d (dial tcp 127.0.0.1:%[1]d: connect: connection refused)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(fleetPod("node1", "agent-a", "127.0.0.1", c.port))
			r := inspect.Remote{Config: &rest.Config{BearerToken: "t", Timeout: c.reqTimeout}, Client: cs}
			fan := inspect.FanOut{Concurrency: 1, Timeout: c.nodeTimeout}
			report := ReadReports(context.Background(), r, []string{"node1"}, fan)[0].Err
			state := r.ReadNodes(context.Background(), []string{"node1"}, nil, nil, fan)[0].Err
			if report == nil || state == nil {
				t.Fatalf("an agent that does not answer was read: report %v, state %v", report, state)
			}
			if report.Error() != state.Error() {
				t.Errorf("two messages for one unreachable node:\n report: %v\n state:  %v", report, state)
			}
			// A repair has no --node-timeout: the other bounds say the same.
			if c.nodeTimeout == time.Minute {
				_, repair := r.ApplyRules(context.Background(), "node1", nodeapi.RulesRequest{})
				if repair == nil || repair.Error() != report.Error() {
					t.Errorf("a repair's message for one unreachable node:\n report: %v\n repair: %v", report, repair)
				}
			}
			want := "node node1: " + fmt.Sprintf(c.want, c.port) +
				fmt.Sprintf(": check that this machine reaches 127.0.0.1:%d", c.port)
			for _, err := range []error{report, state} {
				var u *inspect.ErrAgentUnreachable
				if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "(kubectl -n svctrace logs agent-a)") || !errors.As(err, &u) {
					t.Errorf("got  %v\nwant %s…", err, want)
				}
			}
		})
	}
}
