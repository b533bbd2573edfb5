package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func agentPod(name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: AgentNamespace,
		Labels: map[string]string{"app.kubernetes.io/name": "svctrace", "app.kubernetes.io/component": "agent"}},
		Spec: corev1.PodSpec{NodeName: "node1"}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

// TestAgentPod: the running agent Pod is found; a DaemonSet replacing it
// (one Pod ended or going, another pending) says to try again, not to
// deploy the agent; no Pod, or one that ended alone, says to deploy it.
func TestAgentPod(t *testing.T) {
	for _, c := range []struct {
		name    string
		pods    []*corev1.Pod
		running string
		want    string
		deploy  bool
	}{
		{"running", []*corev1.Pod{agentPod("a-old", corev1.PodSucceeded, false), agentPod("a-new", corev1.PodRunning, false)}, "a-new", "", false},
		{"replaced", []*corev1.Pod{agentPod("a-old", corev1.PodSucceeded, false), agentPod("a-new", corev1.PodPending, false)}, "",
			"Pod a-new is Pending, Pod a-old is Succeeded: the agent is being replaced; try again in a moment", false},
		{"going", []*corev1.Pod{agentPod("a-old", corev1.PodRunning, true)}, "", "Pod a-old is terminating: the agent is being replaced", false},
		{"ended alone", []*corev1.Pod{agentPod("a-old", corev1.PodFailed, false)}, "", "its agent Pod a-old is Failed; deploy the agent", true},
		{"none", nil, "", "no svctrace agent Pod runs there", true},
	} {
		cs := fake.NewClientset()
		for _, p := range c.pods {
			if _, err := cs.CoreV1().Pods(AgentNamespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pod, err := Remote{Client: cs}.AgentPod(context.Background(), "node1")
		if c.running != "" {
			if err != nil || pod.Name != c.running {
				t.Errorf("%s: %v, %v", c.name, pod, err)
			}
			continue
		}
		var na *ErrNoAgent
		if !errors.As(err, &na) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "deploy the agent") != c.deploy {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
