package model

import (
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTopologyByRelease reads the same hints as each release of the window
// does: v1.30 uses zone hints only for a Service whose topology annotation
// enables them, v1.31 to v1.33 use zone hints but not node hints, v1.34 on
// both. TopologyByRelease marks a port another release would read otherwise.
func TestTopologyByRelease(t *testing.T) {
	http80 := slicePort("http", 80, corev1.ProtocolTCP)
	v4 := discoveryv1.AddressTypeIPv4
	zoned := testSlice("a", "svc", v4, http80,
		ep{ip: "10.0.0.1", zones: []string{"zone-a"}},
		ep{ip: "10.0.0.2", zones: []string{"zone-b"}})
	noded := testSlice("a", "svc", v4, http80,
		ep{ip: "10.0.0.1", zones: []string{"zone-a"}, nodes: []string{"node2"}},
		ep{ip: "10.0.0.2", zones: []string{"zone-a"}, nodes: []string{"node1"}},
		ep{ip: "10.0.0.3", zones: []string{"zone-b"}, nodes: []string{"node3"}})
	annotate := func(key, value string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Annotations = map[string]string{key: value} }
	}
	v130 := Topology{ZoneHintsNeedAnnotation: true}
	v133 := Topology{}
	v134 := NewestTopology()
	all2 := []string{"10.0.0.1:80", "10.0.0.2:80"}
	for _, c := range []struct {
		name    string
		topo    Topology
		svc     func(*corev1.Service)
		slice   discoveryv1.EndpointSlice
		cluster []string
		mode    string
		byRel   bool
	}{
		{"v1.30 ignores zone hints without the annotation", v130, nil, zoned, all2, TopologyNone, true},
		{"v1.30 with topology-mode Auto", v130, annotate(corev1.AnnotationTopologyMode, "Auto"), zoned, []string{"10.0.0.1:80"}, TopologyPreferSameZone, false},
		{"v1.30 takes any value but disabled", v130, annotate(corev1.AnnotationTopologyMode, "PreferZone"), zoned, []string{"10.0.0.1:80"}, TopologyPreferSameZone, false},
		{"v1.30 with topology-mode disabled", v130, annotate(corev1.AnnotationTopologyMode, "Disabled"), zoned, all2, TopologyNone, true},
		{"v1.30 with the older topology-aware-hints annotation", v130, annotate(corev1.DeprecatedAnnotationTopologyAwareHints, "auto"), zoned, []string{"10.0.0.1:80"}, TopologyPreferSameZone, false},
		{"v1.33 uses zone hints without the annotation", v133, nil, zoned, []string{"10.0.0.1:80"}, TopologyPreferSameZone, true},
		{"v1.33 ignores node hints", v133, nil, noded, all2, TopologyPreferSameZone, true},
		{"v1.34 prefers the node's own endpoint", v134, nil, noded, []string{"10.0.0.2:80"}, TopologyPreferSameNode, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &snapshot.Cluster{
				Nodes:          []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}},
				Services:       []corev1.Service{testService(c.svc)},
				EndpointSlices: []discoveryv1.EndpointSlice{c.slice},
			}
			v, err := BuildNodeViewWith(cl, "node1", "IPv4", c.topo)
			if err != nil {
				t.Fatal(err)
			}
			p := mustPort(t, v, "ns/svc:http", "TCP")
			checkEps(t, "cluster", p.ClusterEndpoints, c.cluster...)
			if p.TopologyMode != c.mode || p.TopologyByRelease != c.byRel {
				t.Errorf("mode %q, by release %v; want %q, %v", p.TopologyMode, p.TopologyByRelease, c.mode, c.byRel)
			}
		})
	}
}
