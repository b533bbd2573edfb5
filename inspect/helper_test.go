package inspect

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestHelperPodSpec: kubectl debug's netadmin profile, pinned to the node,
// every taint tolerated, bounded in time, no API token, labelled for
// cleanup.
func TestHelperPodSpec(t *testing.T) {
	p := helperPod("svctrace-helper-n1-abc", "n1", Helper{Namespace: "default", Image: "img:1", Deadline: 5 * time.Minute})
	s := p.Spec
	if s.NodeName != "n1" || !s.HostNetwork || s.RestartPolicy != corev1.RestartPolicyNever || s.ActiveDeadlineSeconds == nil ||
		*s.ActiveDeadlineSeconds != 300 || *s.AutomountServiceAccountToken || len(s.Tolerations) != 1 ||
		s.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("spec %+v", s)
	}
	c := s.Containers[0]
	if c.Image != "img:1" || !slices.Equal(c.SecurityContext.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) ||
		!slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container %+v", c)
	}
	if p.Labels["app.kubernetes.io/component"] != "helper" || p.Labels["app.kubernetes.io/name"] != "svctrace" {
		t.Errorf("labels %v", p.Labels)
	}
	if got := shorten("a-very-long-node-name-that-goes-on.and-on-and-on-example-com", 40); len(got) > 40 || got[len(got)-1] == '-' {
		t.Errorf("shorten: %q", got)
	}
}

// TestCleanupHelpers deletes the helper Pods only.
func TestCleanupHelpers(t *testing.T) {
	helper := helperPod("svctrace-helper-n1-abc", "n1", Helper{Namespace: "default", Image: "img", Deadline: time.Minute})
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app.kubernetes.io/name": "svctrace"}}}
	cs := fake.NewClientset(helper, other)
	got, err := Remote{Client: cs}.CleanupHelpers(context.Background(), "")
	if err != nil || !slices.Equal(got, []string{"default/svctrace-helper-n1-abc"}) {
		t.Fatalf("%v, %v", got, err)
	}
	left, _ := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "web" {
		t.Errorf("left %v", left.Items)
	}
}
