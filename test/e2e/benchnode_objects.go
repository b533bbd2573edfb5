//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/svctrace/test/lab"
)

// benchClusterCIDR is kube-proxy's --cluster-cidr in the node-scale benchmark: wide enough for
// 100,000 unique endpoint addresses (the lab's 10.244.0.0/16 holds 65,536), and holding the
// lab's per-node pod CIDRs 10.244.<i>.0/24.
const benchClusterCIDR = "10.240.0.0/12"

// Endpoint addresses: pod CIDR by pod CIDR from node1's 10.244.1.0/24 on (node i's is
// 10.244.i.0/24 as in the lab, continuing into 10.245.x for node 256 and after), hosts .1 to
// .254 of each. The last /24 of the cluster CIDR is 10.255.255.0.
const (
	benchFirstBlock = 10<<24 | 244<<16 | 1<<8
	benchLastBlock  = 10<<24 | 255<<16 | 255<<8
	benchPerBlock   = 254
)

// benchObjects are the API objects of one benchmark size.
type benchObjects struct {
	Namespaces, Services, Slices []lab.Create
	// Middle is the Service in the middle, as NS/NAME (the one explain looks at).
	Middle string
}

func benchNamespace(i int) string { return fmt.Sprintf("bench-%03d", i/100) }
func benchService(i int) string   { return fmt.Sprintf("svc-%05d", i) }

// benchEndpoint is the address and node of the benchmark's endpoint number g (0-based, over
// every Service): unique, in node<i>'s pod CIDR.
func benchEndpoint(g int) (netip.Addr, string, error) {
	block := g / benchPerBlock
	v := benchFirstBlock + block<<8
	if g < 0 || v > benchLastBlock {
		return netip.Addr{}, "", fmt.Errorf("endpoint %d: beyond the cluster CIDR %s", g, benchClusterCIDR)
	}
	v += g%benchPerBlock + 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), fmt.Sprintf("node%d", block+1), nil
}

// makeBenchObjects makes services ClusterIP Services (TCP port 80, 100 to a namespace) with
// one EndpointSlice each of endpoints ready endpoints (target port 8080), without selectors or
// Pods: kube-proxy needs only the Services and their EndpointSlices.
func makeBenchObjects(services, endpoints int) (benchObjects, error) {
	var o benchObjects
	if services <= 0 || endpoints <= 0 {
		return o, fmt.Errorf("benchmark objects: %d Services of %d endpoints: want positive numbers", services, endpoints)
	}
	if _, _, err := benchEndpoint(services*endpoints - 1); err != nil {
		return o, fmt.Errorf("benchmark objects: %d Services of %d endpoints: %w", services, endpoints, err)
	}
	for i := 0; i < services; i += 100 {
		ns := corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: benchNamespace(i)}}
		if err := addBenchObject(&o.Namespaces, "/api/v1/namespaces", ns); err != nil {
			return o, err
		}
	}
	proto := corev1.ProtocolTCP
	port := "http"
	for i := range services {
		ns, name := benchNamespace(i), benchService(i)
		svc := corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{
				Type:  corev1.ServiceTypeClusterIP,
				Ports: []corev1.ServicePort{{Name: port, Protocol: proto, Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if err := addBenchObject(&o.Services, "/api/v1/namespaces/"+ns+"/services", svc); err != nil {
			return o, err
		}
		slice := discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: name + "-bench", Namespace: ns, Labels: map[string]string{
				discoveryv1.LabelServiceName: name,
				discoveryv1.LabelManagedBy:   "svctrace-bench",
			}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &port, Protocol: &proto, Port: benchPtr(int32(8080))}},
		}
		for j := range endpoints {
			addr, node, err := benchEndpoint(i*endpoints + j)
			if err != nil {
				return o, err
			}
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{addr.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: benchPtr(true), Serving: benchPtr(true), Terminating: benchPtr(false)},
				NodeName:   benchPtr(node),
			})
		}
		if err := addBenchObject(&o.Slices, "/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices", slice); err != nil {
			return o, err
		}
	}
	o.Middle = benchNamespace(services/2) + "/" + benchService(services/2)
	return o, nil
}

func addBenchObject(list *[]lab.Create, path string, obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("benchmark objects: encoding for %s: %w", path, err)
	}
	*list = append(*list, lab.Create{Path: path, Body: b})
	return nil
}

func benchPtr[T any](v T) *T { return &v }
