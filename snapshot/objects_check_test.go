package snapshot

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestObjectsTwice: a snapshot, YAML or binary, whose cluster holds a
// Service or an EndpointSlice twice is refused on load, naming the
// object and both places; one name in two namespaces is two objects.
func TestObjectsTwice(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	svc := func(ns, name string) corev1.Service {
		return corev1.Service{ObjectMeta: meta(ns, name), Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7", Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	slice := func(name string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{ObjectMeta: meta("default", name), AddressType: discoveryv1.AddressTypeIPv4}
	}
	for _, c := range []struct {
		name string
		cl   Cluster
		want string
	}{
		{"Service twice", Cluster{Services: []corev1.Service{svc("default", "web"), svc("shop", "web"), svc("default", "web")}},
			"damaged snapshot: cluster.services[2] is a second Service default/web (the first is services[0])"},
		{"EndpointSlice twice", Cluster{EndpointSlices: []discoveryv1.EndpointSlice{slice("web-1"), slice("web-2"), slice("web-2")}},
			"damaged snapshot: cluster.endpointSlices[2] is a second EndpointSlice default/web-2 (the first is endpointSlices[1])"},
		{"one name in two namespaces", Cluster{Services: []corev1.Service{svc("default", "web"), svc("shop", "web")}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{APIVersion: APIVersion, Kind: Kind, Cluster: &c.cl}
			for _, file := range []string{"s.yaml", "s" + BinaryExt} {
				path := filepath.Join(t.TempDir(), file)
				if err := Save(s, path); err != nil {
					t.Fatal(err)
				}
				_, err := Load(path)
				if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
					t.Errorf("%s: %v, want %q", file, err, c.want)
				}
			}
		})
	}
}
