package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProxyVersion reads kube-proxy's version from each place it is told:
// kube-proxy itself, its Pod's image (kubeadm, EKS), the kubelet of a k3s
// or RKE2 node; nothing tells it on a node whose kubelet is plain.
func TestProxyVersion(t *testing.T) {
	pod := func(node, image string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-x"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-proxy", Image: image}}}}
	}
	node := func(name, kubelet string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet}}}
	}
	for _, c := range []struct {
		name, told    string
		cluster       *snapshot.Cluster
		want, wantSrc string
	}{
		{"kube-proxy tells", "v1.32.13", &snapshot.Cluster{Pods: []corev1.Pod{pod("n1", "registry.k8s.io/kube-proxy:v1.31.0")}}, "v1.32.13", "the node's kube-proxy"},
		{"DaemonSet image", "", &snapshot.Cluster{Pods: []corev1.Pod{pod("n1", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.30.0-minimal-eksbuild.3")}}, "v1.30.0-minimal-eksbuild.3", "the image of Pod kube-system/kube-proxy-x"},
		{"another node's Pod", "", &snapshot.Cluster{Pods: []corev1.Pod{pod("n2", "registry.k8s.io/kube-proxy:v1.31.0")}}, "", ""},
		{"k3s node", "", &snapshot.Cluster{Nodes: []corev1.Node{node("n1", "v1.30.4+k3s1")}}, "v1.30.4+k3s1", "the kubelet of node n1 (k3s and RKE2 run kube-proxy at their own version)"},
		{"RKE2 node", "", &snapshot.Cluster{Nodes: []corev1.Node{node("n1", "v1.31.3+rke2r1")}}, "v1.31.3+rke2r1", "the kubelet of node n1 (k3s and RKE2 run kube-proxy at their own version)"},
		{"plain kubelet", "", &snapshot.Cluster{Nodes: []corev1.Node{node("n1", "v1.31.3")}}, "", ""},
		{"no objects", "", nil, "", ""},
	} {
		s := &snapshot.Snapshot{Cluster: c.cluster, Nodes: []snapshot.NodeState{{Name: "n1", KubeProxy: snapshot.ProxyConfig{Version: c.told}}}}
		got, src := ProxyVersion(s, "n1")
		if got != c.want || src != c.wantSrc {
			t.Errorf("%s: %q from %q, want %q from %q", c.name, got, src, c.want, c.wantSrc)
		}
	}
}

// TestReleaseNotes: a version outside the window is always noted; an
// unknown one only where a Service's endpoints depend on the release, or
// in nftables mode where the node's own connections to a Local policy
// Service without local endpoints do.
func TestReleaseNotes(t *testing.T) {
	hinted := &model.NodeView{Ports: []model.ServicePort{
		{Namespace: "default", Name: "zoned", PortName: "http", TopologyByRelease: true},
		{Namespace: "default", Name: "zoned", PortName: "https", TopologyByRelease: true},
		{Namespace: "default", Name: "web", PortName: "http"},
	}}
	plain := &model.NodeView{Ports: hinted.Ports[2:]}
	for _, c := range []struct {
		name    string
		version string
		view    *model.NodeView
		want    string
	}{
		{"known", "v1.30.14", hinted, ""},
		{"unknown, hints", "", hinted, "kube-proxy's version is not known: the topology hints of default/zoned are read as v1.37 does"},
		{"unknown, no hints", "", plain, ""},
		{"older", "v1.29.2", plain, "kube-proxy v1.29.2 is older than the releases svctrace is proven against (v1.30 to v1.37): analysed as v1.30"},
		{"newer", "v1.38.0", plain, "kube-proxy v1.38.0 is newer than the releases svctrace is proven against (v1.30 to v1.37): analysed as v1.37"},
	} {
		notes := releaseNotes(proxyrelease.For(c.version), c.view, "iptables")
		if c.want == "" {
			if len(notes) > 0 {
				t.Errorf("%s: notes %q, want none", c.name, notes)
			}
			continue
		}
		if len(notes) != 1 || !strings.HasPrefix(notes[0], c.want) {
			t.Errorf("%s: notes %q, want one starting %q", c.name, notes, c.want)
		}
	}
}

func TestReleaseNotesNFTables(t *testing.T) {
	v := &model.NodeView{Ports: []model.ServicePort{{Namespace: "default", Name: "lb", PortName: "http", ExternalPolicyLocal: true,
		ExternallyAccessible: true, HasAnyEndpoints: true, LoadBalancerIPs: []string{"198.51.100.60"}}}}
	for mode, want := range map[string]int{"nftables": 1, "iptables": 0} {
		if notes := releaseNotes(proxyrelease.For(""), v, mode); len(notes) != want || want == 1 && !strings.Contains(notes[0], "default/lb") {
			t.Errorf("%s: notes %q, want %d naming default/lb", mode, notes, want)
		}
	}
	if notes := releaseNotes(proxyrelease.For("v1.32.13"), v, "nftables"); len(notes) != 0 {
		t.Errorf("a known release: notes %q", notes)
	}
}
