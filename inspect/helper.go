package inspect

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Where no agent runs, a short-lived helper Pod on the node reads it: the
// netadmin profile of kubectl debug (host network, NET_ADMIN and NET_RAW),
// pinned to the node, tolerating every taint, labelled, and bounded by
// activeDeadlineSeconds so that a helper the CLI could not delete ends by
// itself. "svctrace cleanup" deletes any left.

// HelperSelector labels the helper Pods.
const HelperSelector = "app.kubernetes.io/name=svctrace,app.kubernetes.io/component=helper"

// HelperContainer is the helper Pod's container.
const HelperContainer = "helper"

// Helper says where and how helper Pods run.
type Helper struct {
	Namespace string
	Image     string
	// Deadline bounds the Pod's life (activeDeadlineSeconds).
	Deadline time.Duration
	// Ready bounds the wait for it to run.
	Ready time.Duration
}

// StartHelper starts a helper Pod on node and waits until it runs. stop
// deletes it (and must be called, also after an error); it works after ctx
// is cancelled (Ctrl-C).
func (r Remote) StartHelper(ctx context.Context, node string, h Helper) (pod *corev1.Pod, stop func(), err error) {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := fmt.Sprintf("svctrace-helper-%s-%s", shorten(node, 40), hex.EncodeToString(suffix))
	p := helperPod(name, node, h)
	created, err := r.Client.CoreV1().Pods(h.Namespace).Create(ctx, p, metav1.CreateOptions{})
	stop = func() {}
	if apierrors.IsForbidden(err) {
		return nil, stop, fmt.Errorf("node %s: cannot create a helper Pod in namespace %s (forbidden: the CLI needs create, get and delete of pods, and create of pods/exec, there; deploy/cli-rbac.yaml has the roles): %w", node, h.Namespace, err)
	}
	if err != nil {
		return nil, stop, fmt.Errorf("node %s: creating a helper Pod: %w", node, err)
	}
	stop = func() {
		// A fresh context: the command's may be cancelled already.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Client.CoreV1().Pods(h.Namespace).Delete(dctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	wctx, cancel := context.WithTimeout(ctx, h.Ready)
	defer cancel()
	for {
		got, err := r.Client.CoreV1().Pods(h.Namespace).Get(wctx, created.Name, metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning {
			return got, stop, nil
		}
		if err == nil && (got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded) {
			return nil, stop, fmt.Errorf("node %s: helper Pod %s/%s ended (%s) before it could be used%s", node, h.Namespace, created.Name, got.Status.Phase, waiting(got))
		}
		select {
		case <-wctx.Done():
			why := ""
			if err == nil {
				why = waiting(got)
			}
			return nil, stop, fmt.Errorf("node %s: helper Pod %s/%s did not run within %v%s", node, h.Namespace, created.Name, h.Ready, why)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// waiting says why a Pod's container does not run, if it says.
func waiting(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf(": %s: %s", w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf(": exited %d: %s %s", t.ExitCode, t.Reason, t.Message)
		}
	}
	return ""
}

func helperPod(name, node string, h Helper) *corev1.Pod {
	deadline := int64(h.Deadline / time.Second)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.Namespace, Labels: map[string]string{
			"app.kubernetes.io/name": "svctrace", "app.kubernetes.io/component": "helper"}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			HostNetwork:                   true,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            HelperContainer,
				Image:           h.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{AgentBinary, "helper-wait", "--for", h.Deadline.String()},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                ptr.To[int64](0),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"},
						Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}},
				},
			}},
		},
	}
}

// shorten cuts s to n bytes, for a Pod name.
func shorten(s string, n int) string {
	s = strings.TrimRight(s[:min(len(s), n)], "-.")
	return s
}

// CleanupHelpers deletes the helper Pods left in namespace ("" for every
// namespace) and returns their names (namespace/name).
func (r Remote) CleanupHelpers(ctx context.Context, namespace string) ([]string, error) {
	pods, err := r.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: HelperSelector})
	if err != nil {
		return nil, fmt.Errorf("listing helper Pods: %w", err)
	}
	var out []string
	for _, p := range pods.Items {
		err := r.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("deleting helper Pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out, nil
}

// AgentImage is the image of the agent's DaemonSet, "" when it cannot be
// read.
func (r Remote) AgentImage(ctx context.Context) string {
	ds, err := r.Client.AppsV1().DaemonSets(AgentNamespace).Get(ctx, "svctrace-agent", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == AgentContainer {
			return c.Image
		}
	}
	return ""
}
