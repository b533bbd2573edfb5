package inspect

import (
	"context"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/svctrace/svctrace/snapshot"
)

// KubeProxyPlan is what the cluster's kube-proxy DaemonSet says of a
// node: whether it runs a kube-proxy Pod there, and with which image.
type KubeProxyPlan struct {
	// DaemonSet is kube-proxy's DaemonSet ("" when the cluster has none in
	// kube-system: kube-proxy runs outside the API, or not at all).
	DaemonSet string
	// Expected says the DaemonSet runs a Pod on the node.
	Expected bool
	// Image is the image of its kube-proxy container, Version the
	// release its tag names ("" when it names none).
	Image, Version string
}

// KubeProxyPlanFor reads kube-system's kube-proxy DaemonSet (named
// kube-proxy or labelled k8s-app=kube-proxy, as kubeadm and most
// distributions deploy it) and says whether it runs a Pod on node, as the
// DaemonSet controller decides it: the template's node name, nodeSelector
// and required node affinity, and the node's NoSchedule and NoExecute
// taints against the template's tolerations and those the controller adds
// to every daemon Pod.
func KubeProxyPlanFor(ctx context.Context, cs kubernetes.Interface, node *corev1.Node) (KubeProxyPlan, error) {
	list, err := cs.AppsV1().DaemonSets("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return KubeProxyPlan{}, fmt.Errorf("reading kube-system's DaemonSets: %w", err)
	}
	for i := range list.Items {
		ds := &list.Items[i]
		if ds.Name != "kube-proxy" && ds.Labels["k8s-app"] != "kube-proxy" {
			continue
		}
		p := KubeProxyPlan{DaemonSet: ds.Namespace + "/" + ds.Name}
		spec := ds.Spec.Template.Spec
		for _, c := range spec.Containers {
			if c.Name == "kube-proxy" || p.Image == "" {
				p.Image = c.Image
			}
		}
		p.Version = imageVersion(p.Image)
		p.Expected = runsOn(spec, node)
		return p, nil
	}
	return KubeProxyPlan{}, nil
}

// runsOn says whether a daemon Pod of spec runs on node.
func runsOn(spec corev1.PodSpec, node *corev1.Node) bool {
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false
	}
	pod := &corev1.Pod{Spec: spec}
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !fits {
		return false
	}
	tolerations := append(append([]corev1.Toleration(nil), spec.Tolerations...), daemonTolerations(spec.HostNetwork)...)
	_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	return !untolerated
}

// daemonTolerations are the tolerations the DaemonSet controller gives
// every daemon Pod (pkg/controller/daemon/util: AddOrUpdateDaemonPodTolerations).
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := []corev1.Toleration{
		t(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		t(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		t(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		t(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		t(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		t(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		out = append(out, t(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return out
}

// imageTagVersion finds a release in an image's tag: v1.36.3 of
// registry.k8s.io/kube-proxy:v1.36.3, v1.31.2 of …:v1.31.2-eksbuild.3.
var imageTagVersion = regexp.MustCompile(`:(v1\.[0-9]{1,3}\.[0-9]{1,3})(?:[-+][^:/@]*)?(?:@sha256:[0-9a-f]+)?$`)

// imageVersion is the release an image's tag names, "" when none.
func imageVersion(image string) string {
	if m := imageTagVersion.FindStringSubmatch(image); m != nil {
		return m[1]
	}
	return ""
}

// KubeProxyPlanOf is KubeProxyPlanFor of the node named in the cluster's
// objects; no plan when they hold no such Node.
func KubeProxyPlanOf(ctx context.Context, cs kubernetes.Interface, c *snapshot.Cluster, name string) (KubeProxyPlan, error) {
	if c == nil {
		return KubeProxyPlan{}, nil
	}
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return KubeProxyPlanFor(ctx, cs, &c.Nodes[i])
		}
	}
	return KubeProxyPlan{}, nil
}

// VersionNote says where a version taken from the DaemonSet came from.
func (p KubeProxyPlan) VersionNote() string {
	return fmt.Sprintf("kube-proxy does not answer: its version, %s, is read from the image of DaemonSet %s (%s)", p.Version, p.DaemonSet, p.Image)
}
