package trace_test

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/trace"
)

// TestExplainIPVSWithObjects: with the API objects, a virtual server is
// named by its Service and explained with its real servers; drift, which
// the IPVS table alone cannot answer for yet, refuses rather than says
// "no drift".
func TestExplainIPVSWithObjects(t *testing.T) {
	data, err := os.ReadFile("../testdata/seeds/ipvsadm-ln.minikube.txt")
	if err != nil {
		t.Fatal(err)
	}
	port := corev1.ServicePort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Cluster: &snapshot.Cluster{
			Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "minikube"},
				Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.49.2"}}}}},
			Services: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
				Spec: corev1.ServiceSpec{ClusterIP: "10.109.134.113", ClusterIPs: []string{"10.109.134.113"}, Ports: []corev1.ServicePort{port}}}},
			EndpointSlices: []discoveryv1.EndpointSlice{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: "hello"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{"172.17.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
					{Addresses: []string{"172.17.0.4"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
					{Addresses: []string{"172.17.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				}}},
		},
		Nodes: []snapshot.NodeState{{Name: "minikube", KubeProxy: snapshot.ProxyConfig{Mode: "ipvs"},
			Dumps: []snapshot.Dump{{Collector: "ipvsadm", Text: string(data)}}}}}
	a, err := analysis.Analyze(s, "minikube", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := trace.Explain(a, s.Cluster, analysis.ServiceRef{Namespace: "default", Name: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Frontends) != 1 || rep.Frontends[0].Service != "default/hello:http" || rep.Mode != "ipvs" {
		t.Fatalf("frontends %+v (mode %s)", rep.Frontends, rep.Mode)
	}
	got := backends(rep.Frontends[0], behavior.FromPod)
	for _, ep := range []string{"172.17.0.3:80", "172.17.0.4:80", "172.17.0.5:80"} {
		if got[ep] != "1/3" {
			t.Errorf("backends %v, want a third each to 172.17.0.3-5:80", got)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "drift in ipvs mode is not checked") {
		t.Errorf("the notes do not say drift is not checked: %q", rep.Notes)
	}
	if _, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4"}); err == nil || !strings.Contains(err.Error(), "node minikube: drift in ipvs mode is not checked") {
		t.Errorf("drift of an ipvs node: %v", err)
	}
}
