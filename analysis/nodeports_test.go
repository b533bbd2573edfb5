package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// driftLab runs drift on node1 of the lab's iptables capture after edit.
func driftLab(t *testing.T, edit func(*snapshot.Snapshot, *snapshot.NodeState)) []behavior.Finding {
	t.Helper()
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("node1")
	edit(s, ns)
	rep, err := Drift(s, DriftOptions{Family: "IPv4", Nodes: []string{"node1"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Findings
}

func typeList(fs []behavior.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Type)
	}
	return strings.Join(out, " ")
}

func TestNodePortChecks(t *testing.T) {
	with := func(spec ...string) []behavior.Finding {
		return driftLab(t, func(_ *snapshot.Snapshot, ns *snapshot.NodeState) { ns.KubeProxy.NodePortAddresses = spec })
	}
	// A range of another site: no NodePort answers on the node, and the
	// kernel's NodePort rules (written without it) are more than
	// kube-proxy would write.
	fs := with("198.18.0.0/24")
	if typeList(fs) != "NodePortAddressesMismatch StaleFrontend StaleFrontend StaleFrontend StaleFrontend StaleFrontend" || fs[0].Type != behavior.NodePortAddressesMismatch ||
		!strings.Contains(fs[0].Message, "(198.18.0.0/24) hold none of node node1's addresses (") ||
		!strings.Contains(fs[0].Message, "192.0.2.10") || !strings.Contains(fs[0].Message, "its 5 NodePorts answer on no address") {
		t.Errorf("a range that holds no node address: %+v", fs)
	}
	// kube-proxy reads only the family's ranges; without one it accepts
	// NodePorts on every address, as the kernel's rules here do.
	for _, spec := range [][]string{{"fd00::/64"}, {"192.0.2.0/24"}, {"primary"}, {"all"}, {"0.0.0.0/0", "10.9.0.0/16"}, {"primary", "198.18.0.0/24"}, {"127.0.0.0/8"}} {
		if fs := with(spec...); strings.Contains(typeList(fs), behavior.NodePortAddressesMismatch) {
			t.Errorf("nodePortAddresses %v: %+v", spec, fs)
		}
	}
	if fs := with("fd00::/64"); len(fs) != 0 {
		t.Errorf("an IPv6 range leaves IPv4 NodePorts on every address: %+v", fs)
	}
}

func TestServiceCIDRChecks(t *testing.T) {
	pod := func(name, ip string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:   corev1.PodSpec{NodeName: "node1"},
			Status: corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	apiserver := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-apiserver-node1"},
		Spec: corev1.PodSpec{NodeName: "node1", HostNetwork: true, Containers: []corev1.Container{{Name: "kube-apiserver",
			Command: []string{"kube-apiserver", "--secure-port=6443", "--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112"}}}},
		Status: corev1.PodStatus{PodIP: "192.0.2.10", PodIPs: []corev1.PodIP{{IP: "192.0.2.10"}}}}
	// A CNI pool inside the Service range (kubernetes/kubernetes#128723).
	fs := driftLab(t, func(s *snapshot.Snapshot, _ *snapshot.NodeState) {
		s.Cluster.Pods = append(s.Cluster.Pods, apiserver, pod("in-range", "10.96.0.7"))
	})
	// The Pod is also outside kube-proxy's cluster CIDR: both are true.
	if typeList(fs) != "PodCIDRMismatch ServiceCIDROverlap" || !strings.Contains(fs[1].Message, "The Service range 10.96.0.0/16 (--service-cluster-ip-range of kube-system/kube-apiserver-node1) holds 1 Pod (default/in-range 10.96.0.7): ") {
		t.Errorf("a Pod in the Service range: %+v", fs)
	}
	// Without the range, a Pod whose address is a ClusterIP proves it.
	fs = driftLab(t, func(s *snapshot.Snapshot, _ *snapshot.NodeState) {
		s.Cluster.Pods = append(s.Cluster.Pods, pod("on-a-clusterip", "10.96.218.23"), pod("elsewhere", "10.96.0.7"))
	})
	if typeList(fs) != "PodCIDRMismatch ServiceCIDROverlap" || !strings.Contains(fs[1].Message, "Services' ClusterIPs are the addresses of 1 Pod (default/on-a-clusterip 10.96.218.23 = ClusterIP of default/crowded)") || strings.Contains(fs[1].Message, "elsewhere") {
		t.Errorf("a Pod on a ClusterIP: %+v", fs)
	}
	// The API server's own Pod, on the host's network, and a Pod outside.
	fs = driftLab(t, func(s *snapshot.Snapshot, _ *snapshot.NodeState) {
		s.Cluster.Pods = append(s.Cluster.Pods, apiserver, pod("outside", "10.244.1.99"))
	})
	if len(fs) != 0 {
		t.Errorf("nothing in the Service range: %+v", fs)
	}
}
