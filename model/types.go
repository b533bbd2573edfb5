// Package model computes kube-proxy's view of a node from API objects: the
// service ports one proxier (one IP family) programs, their endpoints and
// how kube-proxy categorises them, and API-side diagnoses for explain.
//
// The rules follow kube-proxy v1.36 (pkg/proxy: servicechangetracker.go,
// serviceport.go, endpointslicecache.go, topology.go).
package model

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Topology modes, as kube-proxy derives them from endpoint hints.
const (
	TopologyNone           = ""
	TopologyPreferSameZone = corev1.ServiceTrafficDistributionPreferSameZone
	TopologyPreferSameNode = corev1.ServiceTrafficDistributionPreferSameNode
)

// ServicePort is one service port as the proxier of one IP family programs
// it.
type ServicePort struct {
	Namespace string
	Name      string
	PortName  string
	// Protocol is TCP, UDP or SCTP.
	Protocol   string
	Port       int32
	NodePort   int32
	TargetPort intstr.IntOrString
	// ClusterIP is the cluster IP of this family ("" if none).
	ClusterIP string
	// ExternalIPs are spec.externalIPs of this family.
	ExternalIPs []string
	// LoadBalancerIPs are status.loadBalancer.ingress IPs of this family,
	// excluding ingress entries with ipMode Proxy.
	LoadBalancerIPs []string
	// LoadBalancerSourceRanges are the normalised CIDRs of this family; a
	// zero-length prefix (allow all) empties the list, as in kube-proxy.
	LoadBalancerSourceRanges []string
	ExternalPolicyLocal      bool
	InternalPolicyLocal      bool
	// ExternallyAccessible: a NodePort, an external IP or an LB VIP of this
	// family.
	ExternallyAccessible bool
	// HealthCheckNodePort is set for LoadBalancer services with
	// externalTrafficPolicy Local.
	HealthCheckNodePort int32
	// AffinityTimeoutSeconds is 0 without ClientIP affinity.
	AffinityTimeoutSeconds int32
	// Endpoints are all endpoints of this port from this family's slices
	// (or, for a Service without any EndpointSlice, its v1 Endpoints
	// object), de-duplicated and sorted by String() (plain string
	// comparison).
	Endpoints []Endpoint
	// EndpointSource is where Endpoints were read: SourceEndpointSlice,
	// SourceEndpoints, or "" when the Service has neither object.
	EndpointSource string
	// ClusterEndpoints are used for Cluster traffic policy (nil when the
	// port never uses it); LocalEndpoints for Local policy (nil likewise).
	ClusterEndpoints []Endpoint
	LocalEndpoints   []Endpoint
	// HasAnyEndpoints: some usable (ready or serving-terminating) endpoint
	// exists anywhere in the cluster.
	HasAnyEndpoints bool
	// TopologyMode is "", PreferSameZone or PreferSameNode.
	TopologyMode string
	// TopologyByRelease: kube-proxy releases of the window that read
	// topology hints otherwise would pick another TopologyMode here.
	TopologyByRelease bool
}

// SPN is the ServicePortName string: "ns/name:port", or "ns/name" when the
// port is unnamed.
func (p *ServicePort) SPN() string {
	if p.PortName == "" {
		return p.Namespace + "/" + p.Name
	}
	return p.Namespace + "/" + p.Name + ":" + p.PortName
}

// ProtoLower is the protocol in lower case, as in chain-name hashes.
func (p *ServicePort) ProtoLower() string {
	return strings.ToLower(p.Protocol)
}

// UsesClusterEndpoints reports whether traffic is ever sent to endpoints by
// Cluster policy (also needed for ETP Local short-circuiting).
func (p *ServicePort) UsesClusterEndpoints() bool {
	return !p.InternalPolicyLocal || p.ExternallyAccessible
}

// UsesLocalEndpoints reports whether traffic is ever sent to endpoints by
// Local policy.
func (p *ServicePort) UsesLocalEndpoints() bool {
	return p.InternalPolicyLocal || (p.ExternalPolicyLocal && p.ExternallyAccessible)
}

// ReachableEndpoints is the union of ClusterEndpoints and LocalEndpoints
// (the endpoints kube-proxy writes per-endpoint objects for), sorted by
// String().
func (p *ServicePort) ReachableEndpoints() []Endpoint {
	seen := make(map[string]bool, len(p.ClusterEndpoints)+len(p.LocalEndpoints))
	var out []Endpoint
	for _, list := range [][]Endpoint{p.ClusterEndpoints, p.LocalEndpoints} {
		for _, ep := range list {
			if s := ep.String(); !seen[s] {
				seen[s] = true
				out = append(out, ep)
			}
		}
	}
	sortEndpoints(out)
	return out
}

// Endpoint is one endpoint of a service port.
type Endpoint struct {
	IP   string
	Port int32
	// Conditions with kube-proxy's defaults applied: ready nil ⇒ true,
	// serving nil ⇒ true, terminating nil ⇒ false.
	Ready, Serving, Terminating bool
	NodeName, Zone              string
	HintZones, HintNodes        []string
	// Local: NodeName is the viewed node.
	Local     bool
	TargetRef *corev1.ObjectReference
	// Slice is the name of the EndpointSlice it came from ("" when it
	// came from a v1 Endpoints object).
	Slice string
	// EndpointsObject is the name of the v1 Endpoints object it came from
	// ("" when it came from an EndpointSlice).
	EndpointsObject string
}

// String is net.JoinHostPort(ip, port): "10.244.1.5:8080", "[fd00::5]:8080".
func (e Endpoint) String() string {
	return net.JoinHostPort(e.IP, strconv.Itoa(int(e.Port)))
}

// NodeView is what the proxier of one IP family on one node programs.
type NodeView struct {
	Node    string
	Family  string
	NodeIPs []string
	// PodCIDRs are the node's pod ranges of the family (spec.podCIDRs).
	PodCIDRs []string
	Zone     string
	// Ports are sorted by (namespace, name, port name, protocol).
	Ports []ServicePort
	// Skipped are services the proxier ignores, sorted by Service.
	Skipped []Skipped
	// Notes are things a reader of a report built on this view should
	// know: Services whose endpoints came from v1 Endpoints objects, and
	// where EndpointSlices and Endpoints objects disagree.
	Notes []string
}

// Skipped is a service that gets no node rules in this view, with why.
type Skipped struct {
	// Service is "namespace/name".
	Service string
	Reason  string
	// Damaged: the Service holds a value the API server refuses (a
	// cluster IP that is not an address of the family); Reason names it.
	Damaged bool
}

// Find returns the ports of one service (nil if none).
func (v *NodeView) Find(namespace, name string) []ServicePort {
	var out []ServicePort
	for i := range v.Ports {
		if v.Ports[i].Namespace == namespace && v.Ports[i].Name == name {
			out = append(out, v.Ports[i])
		}
	}
	return out
}

// FindPort returns the port with that SPN and protocol (case-insensitive).
func (v *NodeView) FindPort(spn, protocol string) (*ServicePort, bool) {
	for i := range v.Ports {
		p := &v.Ports[i]
		if p.SPN() == spn && strings.EqualFold(p.Protocol, protocol) {
			return p, true
		}
	}
	return nil, false
}

// SkipReason returns why a service is skipped in this view.
func (v *NodeView) SkipReason(namespace, name string) (string, bool) {
	s, ok := v.Skip(namespace, name)
	return s.Reason, ok
}

// Skip returns the service's entry in Skipped, if it is skipped.
func (v *NodeView) Skip(namespace, name string) (Skipped, bool) {
	key := namespace + "/" + name
	for _, s := range v.Skipped {
		if s.Service == key {
			return s, true
		}
	}
	return Skipped{}, false
}
