//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// mirrored is a slice of a selector-less Service written by the mirroring
// controller.
func mirrored(s discoveryv1.EndpointSlice) discoveryv1.EndpointSlice {
	s.Labels[discoveryv1.LabelManagedBy] = managedByMirroring
	return s
}

func TestEndpointsMirroringDisagreement(t *testing.T) {
	c := &snapshot.Cluster{
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
	svc := &c.Services[0]
	d := compareEndpoints(findEndpoints(c.Endpoints, svc.Namespace, svc.Name), serviceSlices(c, svc), svc, "")
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

	causes := Diagnose(c, &c.Services[0], v, ProxierTraits{})
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
	c := &snapshot.Cluster{
		Services: []corev1.Service{testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("svc-1", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), eps...)},
		Endpoints: []corev1.Endpoints{obj},
	}
	v := buildView(t, c, "node1", "IPv4")
	if n := len(mustPort(t, v, "ns/svc:http", "TCP").ClusterEndpoints); n != maxEndpointsAddresses+3 {
		t.Errorf("%d cluster endpoints, want all the slice's", n)
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "3 endpoints of the EndpointSlices are beyond the 1000 addresses") {
		t.Errorf("notes = %q", v.Notes)
	}
	causes := Diagnose(c, &c.Services[0], v, ProxierTraits{})
	if want := []string{"info:PodsNotListed", "info:EndpointsTruncated"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}

	// Truncated and also disagreeing: one extra address only in the object.
	c.Endpoints[0].Subsets[0].Addresses = append(c.Endpoints[0].Subsets[0].Addresses, addr("192.0.2.1", ""))
	causes = Diagnose(c, &c.Services[0], nil, ProxierTraits{})
	if want := []string{"warning:EndpointsMismatch", "info:PodsNotListed", "info:EndpointsTruncated"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	if m := causes[0].Message; !strings.Contains(m, "only in the Endpoints object: 192.0.2.1:8080 (http/TCP)") || strings.Contains(m, "only in the EndpointSlices") {
		t.Errorf("mismatch message %q", m)
	}
}

func TestEndpointsDualStackSelectorServiceAgrees(t *testing.T) {
	// The Endpoints controller writes the primary family only; the slices
	// of a dual-stack Service hold both.
	svc := dualStackService()
	svc.Spec.Selector = map[string]string{"app": "web"}
	c := &snapshot.Cluster{
		Services: []corev1.Service{svc},
		EndpointSlices: []discoveryv1.EndpointSlice{
			testSlice("svc-4", "svc", discoveryv1.AddressTypeIPv4, slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "10.0.0.1", ready: bp(true)}),
			testSlice("svc-6", "svc", discoveryv1.AddressTypeIPv6, slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "fd00::1", ready: bp(true)}),
		},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{
			Addresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	for _, fam := range []string{"IPv4", "IPv6"} {
		if v := buildView(t, c, "node1", fam); len(v.Notes) != 0 {
			t.Errorf("%s notes = %q", fam, v.Notes)
		}
	}
	if causes := Diagnose(c, &c.Services[0], nil, ProxierTraits{}); !reflect.DeepEqual(codes(causes), []string{"info:PodsNotListed"}) {
		t.Errorf("codes = %v", codes(causes))
	}

	// The primary family still disagrees when it does.
	c.Endpoints[0].Subsets[0].Addresses[0].IP = "10.0.0.2"
	if v := buildView(t, c, "node1", "IPv4"); len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "only in the Endpoints object: 10.0.0.2:8080 (http/TCP)") {
		t.Errorf("IPv4 notes = %q", v.Notes)
	}
	if v := buildView(t, c, "node1", "IPv6"); len(v.Notes) != 0 {
		t.Errorf("IPv6 notes = %q", v.Notes)
	}
}

func TestEndpointsMirroringLimit(t *testing.T) {
	ips := manyAddresses(maxEndpointsAddresses + 1)
	var eps []ep
	var all []corev1.EndpointAddress
	for i, ip := range ips {
		all = append(all, addr(ip, ""))
		if i < maxEndpointsAddresses {
			eps = append(eps, ep{ip: ip, ready: bp(true)})
		}
	}
	c := &snapshot.Cluster{
		Services: []corev1.Service{testService(nil)},
		EndpointSlices: []discoveryv1.EndpointSlice{mirrored(testSlice("svc-abcde", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), eps...))},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{Addresses: all,
			Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	mm := findCause(t, Diagnose(c, &c.Services[0], nil, ProxierTraits{}), CodeEndpointsMismatch)
	if !strings.Contains(mm.Message, "copies at most 1000 addresses of each subset") ||
		!strings.Contains(mm.Message, "only in the Endpoints object: "+ips[maxEndpointsAddresses]+":8080 (http/TCP)") {
		t.Errorf("message %q", mm.Message)
	}
}
