package inspect

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// kubeadmProxy is kube-proxy's DaemonSet as kubeadm writes it
// (cmd/kubeadm/app/phases/addons/proxy/manifests.go): every taint
// tolerated, Linux nodes only, host network.
func kubeadmProxy(image string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-proxy"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			HostNetwork:  true,
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:   []corev1.Container{{Name: "kube-proxy", Image: image}},
		}}},
	}
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

// TestKubeProxyPlanFor: where kube-proxy's DaemonSet runs a Pod, as its
// controller decides it, and the release its image names.
func TestKubeProxyPlanFor(t *testing.T) {
	linux := map[string]string{"kubernetes.io/os": "linux"}
	offLab := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "svctrace.dev/no-kube-proxy", Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}},
			Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.36.3"}},
		}}}}
	cp := corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	for _, c := range []struct {
		name      string
		ds        *appsv1.DaemonSet
		node      *corev1.Node
		want      bool
		version   string
		daemonSet string
	}{
		{"kubeadm, a worker", kubeadmProxy("registry.k8s.io/kube-proxy:v1.36.3"), node("w1", linux), true, "v1.36.3", "kube-system/kube-proxy"},
		{"kubeadm, the control plane", kubeadmProxy("registry.k8s.io/kube-proxy:v1.36.3"), node("cp", linux, cp), true, "v1.36.3", "kube-system/kube-proxy"},
		{"kubeadm, a Windows node", kubeadmProxy("registry.k8s.io/kube-proxy:v1.36.3"), node("win", map[string]string{"kubernetes.io/os": "windows"}), false, "v1.36.3", "kube-system/kube-proxy"},
		{"EKS's tag", kubeadmProxy("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.31.2-eksbuild.3"), node("w1", linux), true, "v1.31.2", "kube-system/kube-proxy"},
		{"a digest, no release", kubeadmProxy("example.com/kube-proxy@sha256:0123abcd"), node("w1", linux), true, "", "kube-system/kube-proxy"},
		{"taken off by a label", offLab, node("n1", map[string]string{"svctrace.dev/no-kube-proxy": "true"}), false, "v1.36.3", "kube-system/kube-proxy"},
		{"not taken off", offLab, node("n1", nil), true, "v1.36.3", "kube-system/kube-proxy"},
		{"a taint the template does not tolerate", offLab, node("n1", nil, cp), false, "v1.36.3", "kube-system/kube-proxy"},
		{"a taint every daemon Pod tolerates", offLab, node("n1", nil, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), true, "v1.36.3", "kube-system/kube-proxy"},
		{"no kube-proxy DaemonSet", nil, node("n1", nil), false, "", ""},
	} {
		cs := fake.NewClientset()
		if c.ds != nil {
			cs = fake.NewClientset(c.ds)
		}
		p, err := KubeProxyPlanFor(context.Background(), cs, c.node)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Expected != c.want || p.Version != c.version || p.DaemonSet != c.daemonSet {
			t.Errorf("%s: %+v, want expected %v, version %q, DaemonSet %q", c.name, p, c.want, c.version, c.daemonSet)
		}
	}
}
