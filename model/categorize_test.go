package model

import (
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ep describes a slice endpoint for the tests; nil conditions stay nil.
type ep struct {
	ip, node             string
	ready, serving, term *bool
	zones, nodes         []string
}

func bp(b bool) *bool { return &b }

func testSlice(name, svc string, family discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...ep) discoveryv1.EndpointSlice {
	es := discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       ports,
	}
	for _, e := range eps {
		d := discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.term},
		}
		if e.node != "" {
			d.NodeName = &e.node
		}
		if e.zones != nil || e.nodes != nil {
			d.Hints = &discoveryv1.EndpointHints{}
			for _, z := range e.zones {
				d.Hints.ForZones = append(d.Hints.ForZones, discoveryv1.ForZone{Name: z})
			}
			for _, n := range e.nodes {
				d.Hints.ForNodes = append(d.Hints.ForNodes, discoveryv1.ForNode{Name: n})
			}
		}
		es.Endpoints = append(es.Endpoints, d)
	}
	return es
}

func slicePort(name string, port int32, proto corev1.Protocol) []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}
}

// testService is a ClusterIP service ns/svc with one TCP port "http" 80.
func testService(mut func(*corev1.Service)) corev1.Service {
	s := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  "10.96.0.10",
			ClusterIPs: []string{"10.96.0.10"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if mut != nil {
		mut(&s)
	}
	return s
}

func etpLocalNodePort(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.Ports[0].NodePort = 30080
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

func TestCategorization(t *testing.T) {
	yes, no := bp(true), bp(false)
	http80 := slicePort("http", 80, corev1.ProtocolTCP)
	v4 := discoveryv1.AddressTypeIPv4
	tests := []struct {
		name        string
		svc         func(*corev1.Service)
		zone        string
		slices      []discoveryv1.EndpointSlice
		all         []string
		cluster     []string
		local       []string
		hasAny      bool
		mode        string
		wantNoLocal bool // LocalEndpoints must be nil (Local policy unused)
	}{
		{
			name: "terminating fallback in cluster",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", node: "node2", ready: no, serving: yes, term: yes},
				ep{ip: "10.0.0.2", node: "node2", ready: no, serving: no, term: yes})},
			all: []string{"10.0.0.1:80", "10.0.0.2:80"}, cluster: []string{"10.0.0.1:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "terminating fallback local only",
			svc:  etpLocalNodePort,
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", node: "node1", ready: no, serving: yes, term: yes},
				ep{ip: "10.0.0.2", node: "node2", ready: yes})},
			all:     []string{"10.0.0.1:80", "10.0.0.2:80"},
			cluster: []string{"10.0.0.2:80"}, local: []string{"10.0.0.1:80"}, hasAny: true,
		},
		{
			name: "non-serving terminating never used",
			svc:  etpLocalNodePort,
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", node: "node1", ready: no, serving: no, term: yes})},
			all: []string{"10.0.0.1:80"}, cluster: []string{}, local: []string{}, hasAny: false,
		},
		{
			name: "ready nil means ready",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", node: "node1"})},
			all: []string{"10.0.0.1:80"}, cluster: []string{"10.0.0.1:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "serving nil is true, so not-ready terminating is a fallback",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", node: "node1", ready: no, term: yes})},
			all: []string{"10.0.0.1:80"}, cluster: []string{"10.0.0.1:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "zone hints match",
			zone: "zone-a",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", zones: []string{"zone-a"}},
				ep{ip: "10.0.0.2", zones: []string{"zone-b"}},
				ep{ip: "10.0.0.3", ready: no, serving: yes, term: yes})},
			all:     []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
			cluster: []string{"10.0.0.1:80"}, hasAny: true, mode: TopologyPreferSameZone, wantNoLocal: true,
		},
		{
			name: "zone hints without a match for the node's zone",
			zone: "zone-c",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", zones: []string{"zone-a"}},
				ep{ip: "10.0.0.2", zones: []string{"zone-b"}})},
			all: []string{"10.0.0.1:80", "10.0.0.2:80"}, cluster: []string{"10.0.0.1:80", "10.0.0.2:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "zone hints missing on one ready endpoint",
			zone: "zone-a",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", zones: []string{"zone-a"}},
				ep{ip: "10.0.0.2"})},
			all: []string{"10.0.0.1:80", "10.0.0.2:80"}, cluster: []string{"10.0.0.1:80", "10.0.0.2:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "node hints win over zone hints",
			zone: "zone-a",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.0.0.1", zones: []string{"zone-a"}, nodes: []string{"node2"}},
				ep{ip: "10.0.0.2", zones: []string{"zone-a"}, nodes: []string{"node1"}})},
			all: []string{"10.0.0.1:80", "10.0.0.2:80"}, cluster: []string{"10.0.0.2:80"}, hasAny: true, mode: TopologyPreferSameNode, wantNoLocal: true,
		},
		{
			name: "plain string sort order",
			slices: []discoveryv1.EndpointSlice{testSlice("a", "svc", v4, http80,
				ep{ip: "10.244.2.1"}, ep{ip: "10.244.10.1"})},
			all: []string{"10.244.10.1:80", "10.244.2.1:80"}, cluster: []string{"10.244.10.1:80", "10.244.2.1:80"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "duplicate across slices prefers the non-terminating copy",
			svc:  etpLocalNodePort,
			slices: []discoveryv1.EndpointSlice{
				testSlice("a", "svc", v4, http80, ep{ip: "10.0.0.1", node: "node1", ready: yes}),
				testSlice("b", "svc", v4, http80, ep{ip: "10.0.0.1", node: "node1", ready: no, serving: yes, term: yes}),
			},
			all: []string{"10.0.0.1:80"}, cluster: []string{"10.0.0.1:80"}, local: []string{"10.0.0.1:80"}, hasAny: true,
		},
		{
			name: "named targetPort resolved through the slice port name and protocol",
			svc: func(s *corev1.Service) {
				s.Spec.Ports[0].TargetPort = intstr.FromString("web")
			},
			slices: []discoveryv1.EndpointSlice{
				testSlice("a", "svc", v4, []discoveryv1.EndpointPort{
					slicePort("web", 9999, corev1.ProtocolTCP)[0],
					slicePort("http", 8080, corev1.ProtocolUDP)[0],
					slicePort("http", 8080, corev1.ProtocolTCP)[0],
				}, ep{ip: "10.0.0.1"}),
				testSlice("other", "not-svc", v4, http80, ep{ip: "10.9.9.9"}),
			},
			all: []string{"10.0.0.1:8080"}, cluster: []string{"10.0.0.1:8080"}, hasAny: true, wantNoLocal: true,
		},
		{
			name: "dual-stack: the IPv6 slice is ignored by the IPv4 view",
			svc: func(s *corev1.Service) {
				s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol)
				s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, "fd00::10")
			},
			slices: []discoveryv1.EndpointSlice{
				testSlice("v4", "svc", v4, http80, ep{ip: "10.0.0.1"}),
				testSlice("v6", "svc", discoveryv1.AddressTypeIPv6, http80, ep{ip: "fd00::1"}),
			},
			all: []string{"10.0.0.1:80"}, cluster: []string{"10.0.0.1:80"}, hasAny: true, wantNoLocal: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &snapshot.Cluster{
				Nodes:          []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{corev1.LabelTopologyZone: tt.zone}}}},
				Services:       []corev1.Service{testService(tt.svc)},
				EndpointSlices: tt.slices,
			}
			v := buildView(t, c, "node1", "IPv4")
			p := mustPort(t, v, "ns/svc:http", "TCP")
			checkEps(t, "endpoints", p.Endpoints, tt.all...)
			checkEps(t, "cluster", p.ClusterEndpoints, tt.cluster...)
			if tt.wantNoLocal {
				if p.LocalEndpoints != nil || p.UsesLocalEndpoints() {
					t.Errorf("local = %v, uses local %v; want unused", p.LocalEndpoints, p.UsesLocalEndpoints())
				}
			} else {
				checkEps(t, "local", p.LocalEndpoints, tt.local...)
			}
			if p.HasAnyEndpoints != tt.hasAny || p.TopologyMode != tt.mode {
				t.Errorf("hasAny %v mode %q; want %v %q", p.HasAnyEndpoints, p.TopologyMode, tt.hasAny, tt.mode)
			}
		})
	}
}

func TestDualStackIPv6View(t *testing.T) {
	svc := testService(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.ClusterIPs = []string{"10.96.0.10", "FD00::0010"}
		s.Spec.ExternalIPs = []string{"198.51.100.1", "2001:db8::1"}
		s.Spec.LoadBalancerSourceRanges = []string{" 2001:db8::/32 ", "10.0.0.0/8"}
	})
	c := &snapshot.Cluster{
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeExternalIP, Address: "2001:db8::99"},
			{Type: corev1.NodeInternalIP, Address: "192.0.2.1"},
			{Type: corev1.NodeInternalIP, Address: "fd00::1:1"},
		}}}},
		Services: []corev1.Service{svc},
		EndpointSlices: []discoveryv1.EndpointSlice{
			testSlice("v4", "svc", discoveryv1.AddressTypeIPv4, slicePort("http", 80, corev1.ProtocolTCP), ep{ip: "10.0.0.1"}),
			testSlice("v6", "svc", discoveryv1.AddressTypeIPv6, slicePort("http", 80, corev1.ProtocolTCP), ep{ip: "fd00::a", node: "node1"}),
		},
	}
	v := buildView(t, c, "node1", "IPv6")
	if got := v.NodeIPs; len(got) != 2 || got[0] != "fd00::1:1" || got[1] != "2001:db8::99" {
		t.Errorf("NodeIPs = %q", got)
	}
	p := mustPort(t, v, "ns/svc:http", "TCP")
	if p.ClusterIP != "fd00::10" || len(p.ExternalIPs) != 1 || p.ExternalIPs[0] != "2001:db8::1" {
		t.Errorf("clusterIP %q externalIPs %q", p.ClusterIP, p.ExternalIPs)
	}
	if len(p.LoadBalancerSourceRanges) != 1 || p.LoadBalancerSourceRanges[0] != "2001:db8::/32" {
		t.Errorf("source ranges %q", p.LoadBalancerSourceRanges)
	}
	checkEps(t, "v6 endpoints", p.Endpoints, "[fd00::a]:80")
	if !p.Endpoints[0].Local || p.Endpoints[0].Slice != "v6" {
		t.Errorf("endpoint %+v", p.Endpoints[0])
	}
}

func TestZeroSourceRangeMeansAll(t *testing.T) {
	got := sourceRangesOfFamily([]string{"203.0.113.0/24", "0.0.0.0/0"}, corev1.IPv4Protocol)
	if len(got) != 0 {
		t.Errorf("ranges = %q, want none", got)
	}
}
