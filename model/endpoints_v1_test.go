//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/svctrace/inspect"
)

// addr is an Endpoints address for the tests.
func addr(ip, node string) corev1.EndpointAddress {
	a := corev1.EndpointAddress{IP: ip}
	if node != "" {
		a.NodeName = &node
	}
	return a
}

func testEndpoints(name string, subsets ...corev1.EndpointSubset) corev1.Endpoints {
	return corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Subsets: subsets}
}

// dualStackService is ns/svc with ports http 80/TCP and dns 53/UDP and
// 53/TCP, cluster IPs of both families.
func dualStackService() corev1.Service {
	return testService(func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(5353)},
		}
	})
}

func TestEndpointsObjectConversion(t *testing.T) {
	c := &inspect.Cluster{
		Services: []corev1.Service{dualStackService()},
		Endpoints: []corev1.Endpoints{testEndpoints("svc",
			corev1.EndpointSubset{
				Addresses:         []corev1.EndpointAddress{addr("10.0.0.2", "node2"), addr("10.0.0.1", "node1"), addr("fd00::1", "node1")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.3", "node1")},
				// Ports by name and protocol: dns is UDP, dns-tcp TCP,
				// both 5353; the protocol defaults to TCP.
				Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "dns", Port: 5353, Protocol: corev1.ProtocolUDP}},
			},
			corev1.EndpointSubset{
				Addresses: []corev1.EndpointAddress{addr("10.0.0.9", "")},
				Ports:     []corev1.EndpointPort{{Name: "dns-tcp", Port: 5353, Protocol: corev1.ProtocolTCP}},
			})},
		EndpointsListed: true,
	}
	v := buildView(t, c, "node1", "IPv4")
	http := mustPort(t, v, "ns/svc:http", "TCP")
	checkEps(t, "http endpoints", http.Endpoints, "10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080")
	checkEps(t, "http cluster endpoints", http.ClusterEndpoints, "10.0.0.1:8080", "10.0.0.2:8080")
	if http.EndpointSource != SourceEndpoints || !http.HasAnyEndpoints {
		t.Errorf("http: source %q, has any %v", http.EndpointSource, http.HasAnyEndpoints)
	}
	for _, ep := range http.Endpoints {
		wantReady := ep.IP != "10.0.0.3"
		if ep.Ready != wantReady || ep.Serving != wantReady || ep.Terminating {
			t.Errorf("%s: ready %v serving %v terminating %v", ep, ep.Ready, ep.Serving, ep.Terminating)
		}
		if ep.Local != (ep.NodeName == "node1") || ep.EndpointsObject != "svc" || ep.Slice != "" {
			t.Errorf("%s: node %q local %v object %q slice %q", ep, ep.NodeName, ep.Local, ep.EndpointsObject, ep.Slice)
		}
	}
	checkEps(t, "dns/UDP endpoints", mustPort(t, v, "ns/svc:dns", "UDP").Endpoints, "10.0.0.1:5353", "10.0.0.2:5353", "10.0.0.3:5353")
	checkEps(t, "dns-tcp/TCP endpoints", mustPort(t, v, "ns/svc:dns-tcp", "TCP").Endpoints, "10.0.0.9:5353")
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "v1 Endpoints object") || !strings.Contains(v.Notes[0], "ns/svc") {
		t.Errorf("notes = %q", v.Notes)
	}

	v6 := buildView(t, c, "node1", "IPv6")
	http6 := mustPort(t, v6, "ns/svc:http", "TCP")
	checkEps(t, "IPv6 http endpoints", http6.Endpoints, "[fd00::1]:8080")
	if !http6.Endpoints[0].Local || !http6.Endpoints[0].Ready {
		t.Errorf("IPv6 endpoint %+v", http6.Endpoints[0])
	}
	checkEps(t, "IPv6 dns-tcp endpoints", mustPort(t, v6, "ns/svc:dns-tcp", "TCP").Endpoints)
}

func TestEndpointsObjectDuplicatePrefersReady(t *testing.T) {
	c := &inspect.Cluster{
		Services: []corev1.Service{testService(nil)},
		Endpoints: []corev1.Endpoints{testEndpoints("svc",
			corev1.EndpointSubset{NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
				Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}},
			corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
				Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	p := mustPort(t, buildView(t, c, "node1", "IPv4"), "ns/svc:http", "TCP")
	if len(p.Endpoints) != 1 || !p.Endpoints[0].Ready {
		t.Errorf("endpoints = %+v", p.Endpoints)
	}
}

func TestSlicesWinOverEndpointsObject(t *testing.T) {
	c := &inspect.Cluster{
		Services: []corev1.Service{testService(nil)},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("svc-v6", "svc", discoveryv1.AddressTypeIPv6,
			slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "fd00::1", ready: bp(true)})},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{
			Addresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	// An IPv6 slice alone still makes the slices the source: the IPv4
	// proxier of kube-proxy 1.19 and later sees no endpoint.
	p := mustPort(t, buildView(t, c, "node1", "IPv4"), "ns/svc:http", "TCP")
	if p.EndpointSource != SourceEndpointSlice || len(p.Endpoints) != 0 {
		t.Errorf("source %q, endpoints %v", p.EndpointSource, epStrings(p.Endpoints))
	}
}

// mirrored is a slice of a selector-less Service written by the mirroring
// controller.
func mirrored(s discoveryv1.EndpointSlice) discoveryv1.EndpointSlice {
	s.Labels[discoveryv1.LabelManagedBy] = managedByMirroring
	return s
}

func TestEndpointsMirroringDisagreement(t *testing.T) {
	c := &inspect.Cluster{
		Services: []corev1.Service{testService(nil)},
		EndpointSlices: []discoveryv1.EndpointSlice{mirrored(testSlice("svc-abcde", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP),
			ep{ip: "10.0.0.1", ready: bp(true)},
			ep{ip: "10.0.0.2", ready: bp(false)},
			ep{ip: "10.0.0.4", ready: bp(true)},
			// Terminating pods are not in Endpoints objects: no disagreement.
			ep{ip: "10.0.0.5", ready: bp(false), serving: bp(true), term: bp(true)}))},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{
			Addresses: []corev1.EndpointAddress{addr("10.0.0.1", ""), addr("10.0.0.2", ""), addr("10.0.0.3", "")},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
		EndpointsListed: true,
	}
	d := compareEndpoints(c, &c.Services[0], "")
	if !reflect.DeepEqual(d.onlySlices, []string{"10.0.0.4:8080 (http/TCP)"}) ||
		!reflect.DeepEqual(d.onlyEndpoints, []string{"10.0.0.3:8080 (http/TCP)"}) ||
		!reflect.DeepEqual(d.readyInEndpoints, []string{"10.0.0.2:8080 (http/TCP)"}) ||
		len(d.readyInSlices) != 0 || d.cutOff != 0 || !d.mirrored {
		t.Errorf("diff = %+v", d)
	}

	v := buildView(t, c, "node1", "IPv4")
	p := mustPort(t, v, "ns/svc:http", "TCP")
	if p.EndpointSource != SourceEndpointSlice {
		t.Errorf("source %q", p.EndpointSource)
	}
	checkEps(t, "cluster endpoints (the slice's)", p.ClusterEndpoints, "10.0.0.1:8080", "10.0.0.4:8080")
	if len(v.Notes) != 1 || !strings.HasPrefix(v.Notes[0], "ns/svc: the EndpointSlices mirrored") ||
		!strings.Contains(v.Notes[0], "only in the Endpoints object: 10.0.0.3:8080 (http/TCP)") {
		t.Errorf("notes = %q", v.Notes)
	}

	causes := Diagnose(c, &c.Services[0], v)
	mm := findCause(t, causes, CodeEndpointsMismatch)
	for _, want := range []string{"mirroring failed or is behind", "only in the EndpointSlices: 10.0.0.4:8080 (http/TCP)",
		"ready in the Endpoints object but not in the EndpointSlices: 10.0.0.2:8080 (http/TCP)"} {
		if !strings.Contains(mm.Message, want) {
			t.Errorf("mismatch message %q lacks %q", mm.Message, want)
		}
	}
	if mm.Severity != SeverityWarning || !reflect.DeepEqual(mm.Objects, []string{"Service ns/svc", "Endpoints ns/svc", "EndpointSlice ns/svc-abcde"}) {
		t.Errorf("mismatch cause %+v", mm)
	}
	for _, cs := range causes {
		if cs.Code == CodeEndpointsOnly || cs.Code == CodeEndpointsTruncated {
			t.Errorf("unexpected cause %+v", cs)
		}
	}
}

// manyAddresses returns n addresses 10.0.x.y.
func manyAddresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
	}
	return out
}

func TestEndpointsTruncatedIsNoDisagreement(t *testing.T) {
	ips := manyAddresses(maxEndpointsAddresses + 3)
	var eps []ep
	var kept []corev1.EndpointAddress
	for i, ip := range ips {
		eps = append(eps, ep{ip: ip, ready: bp(true)})
		if i < maxEndpointsAddresses {
			kept = append(kept, addr(ip, ""))
		}
	}
	obj := testEndpoints("svc", corev1.EndpointSubset{Addresses: kept, Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}})
	obj.Annotations = map[string]string{corev1.EndpointsOverCapacity: "truncated"}
	c := &inspect.Cluster{
		Services: []corev1.Service{testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("svc-1", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), eps...)},
		Endpoints: []corev1.Endpoints{obj},
	}
	v := buildView(t, c, "node1", "IPv4")
	if n := len(mustPort(t, v, "ns/svc:http", "TCP").ClusterEndpoints); n != maxEndpointsAddresses+3 {
		t.Errorf("%d cluster endpoints, want all the slice's", n)
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "3 endpoint(s) of the EndpointSlices are beyond the 1000 addresses") {
		t.Errorf("notes = %q", v.Notes)
	}
	causes := Diagnose(c, &c.Services[0], v)
	if want := []string{"info:PodsNotListed", "info:EndpointsTruncated"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}

	// Truncated and also disagreeing: one extra address only in the object.
	c.Endpoints[0].Subsets[0].Addresses = append(c.Endpoints[0].Subsets[0].Addresses, addr("192.0.2.1", ""))
	causes = Diagnose(c, &c.Services[0], nil)
	if want := []string{"warning:EndpointsMismatch", "info:PodsNotListed", "info:EndpointsTruncated"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	if m := causes[0].Message; !strings.Contains(m, "only in the Endpoints object: 192.0.2.1:8080 (http/TCP)") || strings.Contains(m, "only in the EndpointSlices") {
		t.Errorf("mismatch message %q", m)
	}
}

// TestFixtureEndpointsOnlySameView: the two-nodes capture with its slices
// turned into Endpoints objects gives each port the same endpoints on
// both nodes.
func TestFixtureEndpointsOnlySameView(t *testing.T) {
	data, err := os.ReadFile("../testdata/endpoints/two-nodes-endpoints.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ec, notes, err := DecodeObjects(data)
	if err != nil || len(notes) != 0 {
		t.Fatalf("DecodeObjects: %v, notes %q", err, notes)
	}
	if len(ec.Endpoints) != 3 || len(ec.EndpointSlices) != 0 || !ec.EndpointsListed {
		t.Fatalf("decoded %d Endpoints, %d slices, listed %v", len(ec.Endpoints), len(ec.EndpointSlices), ec.EndpointsListed)
	}
	sc := loadFixture(t)
	for _, node := range []string{"node1", "node2"} {
		want, got := buildView(t, sc, node, "IPv4"), buildView(t, ec, node, "IPv4")
		if len(got.Ports) != len(want.Ports) {
			t.Fatalf("%s: %d ports, want %d", node, len(got.Ports), len(want.Ports))
		}
		for i := range want.Ports {
			w, g := &want.Ports[i], &got.Ports[i]
			name := node + " " + g.SPN() + "/" + g.Protocol
			checkEps(t, name+" cluster endpoints", g.ClusterEndpoints, epStrings(w.ClusterEndpoints)...)
			checkEps(t, name+" local endpoints", g.LocalEndpoints, epStrings(w.LocalEndpoints)...)
			if g.HasAnyEndpoints != w.HasAnyEndpoints {
				t.Errorf("%s: has any %v, want %v", name, g.HasAnyEndpoints, w.HasAnyEndpoints)
			}
			wantSource := ""
			if w.EndpointSource == SourceEndpointSlice {
				wantSource = SourceEndpoints
			}
			if g.EndpointSource != wantSource {
				t.Errorf("%s: source %q, want %q", name, g.EndpointSource, wantSource)
			}
		}
		if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "for 3 Service(s): default/nginx, shop/cart, shop/dns") {
			t.Errorf("%s notes = %q", node, got.Notes)
		}
		if len(want.Notes) != 0 {
			t.Errorf("%s notes with slices = %q", node, want.Notes)
		}
	}
}
