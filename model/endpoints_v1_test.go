//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"os"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	c := &snapshot.Cluster{
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
	c := &snapshot.Cluster{
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
	c := &snapshot.Cluster{
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
		if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "for 3 Services: default/nginx, shop/cart, shop/dns") {
			t.Errorf("%s notes = %q", node, got.Notes)
		}
		if len(want.Notes) != 0 {
			t.Errorf("%s notes with slices = %q", node, want.Notes)
		}
	}
}

// TestEndpointsObjectIgnoredBesideOtherSlices: where other Services have
// EndpointSlices, kube-proxy 1.19 and later is the reader, and a Service
// with only an Endpoints object (mirroring failed) has no endpoint for it:
// the model expects none, and explain warns why.
func TestEndpointsObjectIgnoredBesideOtherSlices(t *testing.T) {
	other := testService(nil)
	other.Name = "other"
	c := &snapshot.Cluster{
		Services: []corev1.Service{testService(nil), other},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("other-1", "other", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "10.0.0.9", ready: bp(true)})},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{
			Addresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	v := buildView(t, c, "node1", "IPv4")
	p := mustPort(t, v, "ns/svc:http", "TCP")
	if len(p.Endpoints) != 0 || p.HasAnyEndpoints {
		t.Errorf("endpoints %v: kube-proxy reads no Endpoints object beside EndpointSlices", epStrings(p.Endpoints))
	}
	causes := Diagnose(c, &c.Services[0], v, ProxierTraits{})
	found := false
	for _, cs := range causes {
		if cs.Code == CodeEndpointsOnly && cs.Severity == SeverityWarning && strings.Contains(cs.Message, "no EndpointSlice, while other Services have slices") {
			found = true
		}
	}
	if !found {
		t.Errorf("causes %+v lack the EndpointsOnly warning", causes)
	}
}
