package inspect

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// podLists counts the LISTs of Pods the client was asked for.
func podLists(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// TestListAgentPodsOneList: the agent Pods of 1,000 nodes cost one LIST,
// and each node gets its own running Pod.
func TestListAgentPodsOneList(t *testing.T) {
	const nodes = 1000
	var objs []runtime.Object
	for i := range nodes {
		p := agentPod(fmt.Sprintf("agent-%d", i), corev1.PodRunning, false)
		p.Spec.NodeName = fmt.Sprintf("node%d", i)
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	pods := Remote{Client: cs}.ListAgentPods(context.Background())
	for i := range nodes {
		p, err := pods.Of(fmt.Sprintf("node%d", i))
		if err != nil || p.Name != fmt.Sprintf("agent-%d", i) {
			t.Fatalf("node%d: %v, %v", i, p, err)
		}
	}
	if _, err := pods.Of("node-without-agent"); err == nil {
		t.Error("a node without an agent Pod has one")
	}
	if n := podLists(cs); n != 1 {
		t.Errorf("%d LISTs of Pods for %d nodes, want 1", n, nodes)
	}
}

// TestAgentPodsAsAgentPod: for every state of a node's agent Pods
// (running, replaced, terminating, ended, none) and a LIST forbidden,
// AgentPods.Of answers exactly as AgentPod does.
func TestAgentPodsAsAgentPod(t *testing.T) {
	for _, c := range []struct {
		name string
		pods []*corev1.Pod
	}{
		{"running", []*corev1.Pod{agentPod("a-old", corev1.PodSucceeded, false), agentPod("a-new", corev1.PodRunning, false)}},
		{"replaced", []*corev1.Pod{agentPod("a-old", corev1.PodSucceeded, false), agentPod("a-new", corev1.PodPending, false)}},
		{"going", []*corev1.Pod{agentPod("a-old", corev1.PodRunning, true)}},
		{"ended alone", []*corev1.Pod{agentPod("a-old", corev1.PodFailed, false)}},
		{"succeeded alone", []*corev1.Pod{agentPod("a-old", corev1.PodSucceeded, false)}},
		{"none", nil},
	} {
		cs := fake.NewClientset()
		for _, p := range c.pods {
			if _, err := cs.CoreV1().Pods(AgentNamespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		r := Remote{Client: cs}
		want, wantErr := r.AgentPod(context.Background(), "node1")
		got, gotErr := r.ListAgentPods(context.Background()).Of("node1")
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (want == nil) != (got == nil) || (want != nil && want.Name != got.Name) {
			t.Errorf("%s: AgentPods.Of gives %v, %v; AgentPod %v, %v", c.name, got, gotErr, want, wantErr)
		}
	}
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no"))
	})
	r := Remote{Client: cs}
	_, wantErr := r.AgentPod(context.Background(), "node1")
	_, gotErr := r.ListAgentPods(context.Background()).Of("node1")
	if gotErr == nil || gotErr.Error() != wantErr.Error() || !apierrors.IsForbidden(gotErr) {
		t.Errorf("forbidden: AgentPods.Of gives %v; AgentPod %v", gotErr, wantErr)
	}
}
