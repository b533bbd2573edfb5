package snapshottest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/svctrace/snapshot"
)

// Addresses of the synthetic cluster: Service s has ClusterIP
// IP(ClusterIPBase, s+10), its endpoint e the pod address
// IP(PodIPBase, s*endpoints+e), on node2; node1 is the node whose kernel
// state the snapshot holds.
const (
	ClusterIPBase = 0x0a600000 // 10.96.0.0
	PodIPBase     = 0x0af40000 // 10.244.0.0
	Node1IP       = "192.0.2.10"
	Node2IP       = "192.0.2.11"
)

// Node is a snapshot of node1 of a synthetic cluster: the API objects for
// services ClusterIP Services of endpoints ready endpoints each (all on
// node2), and node1's iptables-save in kube-proxy v1.36's layout for them.
// A healthy node: drift finds nothing.
func Node(services, endpoints int) *snapshot.Snapshot {
	c := &snapshot.Cluster{PodsListed: false}
	for i, ip := range []string{Node1IP, Node2IP} {
		c.Nodes = append(c.Nodes, corev1.Node{
			TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d", i+1)},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
		})
	}
	ready, node2 := true, "node2"
	port, proto, name := int32(8080), corev1.ProtocolTCP, "http"
	for s := range services {
		ns, svcName := fmt.Sprintf("ns-%d", s%97), fmt.Sprintf("svc-%d", s)
		ip := IP(ClusterIPBase, s+10)
		c.Services = append(c.Services, corev1.Service{
			TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName},
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				Selector:   map[string]string{"app": svcName},
				Ports:      []corev1.ServicePort{{Name: name, Port: 80, TargetPort: intstr.FromInt32(port), Protocol: proto}},
			},
		})
		es := discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName + "-1",
				Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}
		for e := range endpoints {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{IP(PodIPBase, s*endpoints+e)},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready},
				NodeName:   &node2,
			})
		}
		c.EndpointSlices = append(c.EndpointSlices, es)
	}
	return &snapshot.Snapshot{
		APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Metadata: snapshot.Metadata{CreationTimestamp: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Source: "import", Generator: "snapshottest"},
		Cluster:  c,
		Nodes: []snapshot.NodeState{{
			Name: "node1", Addresses: []string{Node1IP},
			KubeProxy: snapshot.ProxyConfig{Mode: "iptables", ClusterCIDRs: []string{"10.244.0.0/16"}, Source: "flags"},
			Dumps: []snapshot.Dump{{Collector: "iptables-save", Family: "IPv4", Backend: "nf_tables",
				Text: IPTablesSave(services, endpoints)}},
		}},
	}
}
