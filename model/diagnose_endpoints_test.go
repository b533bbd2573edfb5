//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestEndpointsSelectorServiceDisagreementWording(t *testing.T) {
	c := &snapshot.Cluster{
		Services: []corev1.Service{testService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })},
		EndpointSlices: []discoveryv1.EndpointSlice{testSlice("svc-1", "svc", discoveryv1.AddressTypeIPv4,
			slicePort("http", 8080, corev1.ProtocolTCP), ep{ip: "10.0.0.1", ready: bp(true)})},
		Endpoints: []corev1.Endpoints{testEndpoints("svc", corev1.EndpointSubset{
			NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.1", "")},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}}})},
	}
	mm := findCause(t, Diagnose(c, &c.Services[0], nil, ProxierTraits{}), CodeEndpointsMismatch)
	if !strings.Contains(mm.Message, "its EndpointSlices (which kube-proxy 1.19 and later follows") ||
		!strings.Contains(mm.Message, "ready in the EndpointSlices but not in the Endpoints object: 10.0.0.1:8080 (http/TCP)") {
		t.Errorf("message %q", mm.Message)
	}
}

func TestEndpointsOnlyCauses(t *testing.T) {
	obj := testEndpoints("svc", corev1.EndpointSubset{
		Addresses:         []corev1.EndpointAddress{addr("10.0.0.1", "node1")},
		NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.2", "node1")},
		Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}}})
	c := &snapshot.Cluster{Services: []corev1.Service{testService(nil)}, Endpoints: []corev1.Endpoints{obj}, EndpointsListed: true}
	causes := diagnose(t, c)
	if want := []string{"info:NoSelector", "info:EndpointsOnly"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	only := causes[1]
	if !strings.HasPrefix(only.Message, "endpoints read from the v1 Endpoints object: the Service has no EndpointSlice") ||
		!strings.Contains(only.Message, "mirroring controller") {
		t.Errorf("EndpointsOnly message %q", only.Message)
	}

	// Not ready only: NoReadyEndpoints counts the object's addresses.
	c.Endpoints[0].Subsets[0].Addresses = nil
	causes = diagnose(t, c)
	if want := []string{"error:NoReadyEndpoints", "info:NoSelector", "info:EndpointsOnly"}; !reflect.DeepEqual(codes(causes), want) {
		t.Fatalf("codes = %v, want %v", codes(causes), want)
	}
	if m := causes[0].Message; !strings.Contains(m, "has 1 endpoint but none is ready") {
		t.Errorf("NoReadyEndpoints message %q", m)
	}

	// Truncated, and the only source: a warning.
	c.Endpoints[0].Annotations = map[string]string{corev1.EndpointsOverCapacity: "truncated"}
	c.Endpoints[0].Labels = map[string]string{discoveryv1.LabelSkipMirror: "true"}
	causes = diagnose(t, c)
	tr := findCause(t, causes, CodeEndpointsTruncated)
	if tr.Severity != SeverityWarning || !strings.Contains(tr.Message, "the only source of its endpoints") {
		t.Errorf("truncated cause %+v", tr)
	}
	if m := findCause(t, causes, CodeEndpointsOnly).Message; !strings.Contains(m, "skip-mirror=true") {
		t.Errorf("EndpointsOnly message %q", m)
	}

	// No subsets at all: NoEndpoints names the Endpoints object.
	c.Endpoints[0].Subsets = nil
	ne := findCause(t, diagnose(t, c), CodeNoEndpoints)
	if !strings.Contains(ne.Message, "its v1 Endpoints object lists no endpoint") ||
		!reflect.DeepEqual(ne.Objects, []string{"Service ns/svc", "Endpoints ns/svc"}) {
		t.Errorf("NoEndpoints cause %+v", ne)
	}

	// Endpoints listed, none for the Service.
	c.Endpoints = nil
	if m := findCause(t, diagnose(t, c), CodeNoEndpoints).Message; !strings.Contains(m, "has neither an EndpointSlice nor a v1 Endpoints object") {
		t.Errorf("NoEndpoints message %q", m)
	}
	c.EndpointsListed = false
	if m := findCause(t, diagnose(t, c), CodeNoEndpoints).Message; !strings.Contains(m, "no EndpointSlice lists any endpoint") {
		t.Errorf("NoEndpoints message without Endpoints listed %q", m)
	}
}
