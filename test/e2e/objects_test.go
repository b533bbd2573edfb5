//go:build linux

package e2e

import (
	"fmt"
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/svctrace/svctrace/test/lab"
)

// endpoint is one EndpointSlice endpoint of the matrix.
type endpoint struct {
	pod, ip, node string
	// ready, serving, terminating; zero value means ready.
	notReady, terminating bool
	zone                  string
}

// yaml writes the endpoint; one without a node or a pod (the API server's
// own endpoint, which kube-apiserver writes) has no nodeName or targetRef.
func (e endpoint) yaml() string {
	ready := !e.notReady
	s := fmt.Sprintf(`- addresses: [%q]
  conditions: {ready: %t, serving: true, terminating: %t}
`, e.ip, ready, e.terminating)
	if e.node != "" {
		s += "  nodeName: " + e.node + "\n"
	}
	if e.pod != "" {
		s += "  targetRef: {kind: Pod, namespace: default, name: " + e.pod + "}\n"
	}
	if e.zone != "" {
		s += fmt.Sprintf("  zone: %s\n  hints: {forZones: [{name: %s}]}\n", e.zone, e.zone)
	}
	return s
}

// slicePort is a port of an EndpointSlice.
type slicePort struct {
	name, proto string
	port        int
}

// sliceYAML writes an EndpointSlice for service svc, as the controller
// would (the lab has no controller-manager, so slices are made by hand,
// as in the fixtures).
func sliceYAML(svc, name string, ports []slicePort, eps []endpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s
  namespace: default
  labels:
    kubernetes.io/service-name: %s
    endpointslice.kubernetes.io/managed-by: lab
addressType: IPv4
ports:
`, name, svc)
	for _, p := range ports {
		fmt.Fprintf(&b, "- {name: %q, port: %d, protocol: %s}\n", p.name, p.port, p.proto)
	}
	if len(eps) == 0 {
		b.WriteString("endpoints: []\n")
		return b.String()
	}
	b.WriteString("endpoints:\n")
	for _, e := range eps {
		b.WriteString(e.yaml())
	}
	return b.String()
}

// sliceSpec is an EndpointSlice as the matrix file declares it.
type sliceSpec struct {
	service   string
	Name      string         `yaml:"name"`
	Ports     []portSpec     `yaml:"ports"`
	Endpoints []endpointSpec `yaml:"endpoints"`
}

// portSpec is a port of an EndpointSlice in the matrix file.
type portSpec struct {
	Name     string `yaml:"name"`
	Port     int    `yaml:"port"`
	Protocol string `yaml:"protocol"`
}

// endpointSpec is an endpoint as the matrix file declares it: a lab pod,
// or an address (explicit or a node's) with an optional pod and node.
type endpointSpec struct {
	Pod, Address, NodeAddress, Node string
	NotReady, Terminating           bool
	Zone                            string
	// line is where the endpoint is in the file.
	line int
}

// UnmarshalYAML takes a pod's name or a mapping of the endpoint's fields.
func (e *endpointSpec) UnmarshalYAML(n *yaml.Node) error {
	*e = endpointSpec{line: n.Line}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		e.Pod = n.Value
		return nil
	case n.Kind != yaml.MappingNode:
		return fmt.Errorf("line %d: an endpoint is a pod's name or a mapping", n.Line)
	}
	for i := 0; i < len(n.Content); i += 2 {
		switch k := n.Content[i]; k.Value {
		case "pod", "address", "nodeAddress", "node", "ready", "terminating", "zone":
		default:
			return fmt.Errorf("line %d: unknown endpoint field %q", k.Line, k.Value)
		}
	}
	var raw struct {
		Pod         string `yaml:"pod"`
		Address     string `yaml:"address"`
		NodeAddress string `yaml:"nodeAddress"`
		Node        string `yaml:"node"`
		Ready       *bool  `yaml:"ready"`
		Terminating bool   `yaml:"terminating"`
		Zone        string `yaml:"zone"`
	}
	if err := n.Decode(&raw); err != nil {
		return fmt.Errorf("endpoint at line %d: %w", n.Line, err)
	}
	e.Pod, e.Address, e.NodeAddress, e.Node = raw.Pod, raw.Address, raw.NodeAddress, raw.Node
	e.NotReady = raw.Ready != nil && !*raw.Ready
	e.Terminating, e.Zone = raw.Terminating, raw.Zone
	return e.check()
}

// check tells whether the endpoint's fields go together.
func (e endpointSpec) check() error {
	switch {
	case e.Address != "" && e.NodeAddress != "":
		return fmt.Errorf("line %d: an endpoint has an address or a nodeAddress, not both", e.line)
	case e.Address == "" && e.NodeAddress == "" && e.Pod == "":
		return fmt.Errorf("line %d: an endpoint needs a pod, an address or a nodeAddress", e.line)
	case e.Address == "" && e.NodeAddress == "" && e.Node != "":
		return fmt.Errorf("line %d: an endpoint of pod %s is on the pod's node; node goes with an address or a nodeAddress", e.line, e.Pod)
	}
	if e.Address != "" {
		if a, err := netip.ParseAddr(e.Address); err != nil || !a.Is4() {
			return fmt.Errorf("line %d: endpoint address %q is no IPv4 address", e.line, e.Address)
		}
	}
	return nil
}

// matrixSlice is an EndpointSlice of the matrix with its addresses.
type matrixSlice struct {
	service, name string
	ports         []slicePort
	endpoints     []endpoint
}

// expand gives the matrix's EndpointSlices the addresses of the lab's pods
// and nodes: pods by name, nodeIP a node's InternalIP (false for no such
// node).
func (m *matrix) expand(pods map[string]*lab.Pod, nodeIP func(node string) (string, bool)) ([]matrixSlice, error) {
	var out []matrixSlice
	for _, s := range m.slices {
		ms := matrixSlice{service: s.service, name: s.Name}
		for _, p := range s.Ports {
			ms.ports = append(ms.ports, slicePort{name: p.Name, proto: p.Protocol, port: p.Port})
		}
		for _, e := range s.Endpoints {
			ep := endpoint{pod: e.Pod, ip: e.Address, node: e.Node, notReady: e.NotReady, terminating: e.Terminating, zone: e.Zone}
			switch {
			case e.NodeAddress != "":
				ip, ok := nodeIP(e.NodeAddress)
				if !ok {
					return nil, fmt.Errorf("%s:%d: EndpointSlice %s: no lab node %s", m.name, e.line, s.Name, e.NodeAddress)
				}
				ep.ip = ip
			case e.Address == "":
				p, ok := pods[e.Pod]
				if !ok {
					return nil, fmt.Errorf("%s:%d: EndpointSlice %s: no lab pod %s", m.name, e.line, s.Name, e.Pod)
				}
				ep.ip, ep.node = p.IP, p.Node
			}
			ms.endpoints = append(ms.endpoints, ep)
		}
		out = append(out, ms)
	}
	return out, nil
}

// slicesYAML writes the EndpointSlices; change, if not nil, may first edit
// each one's endpoints, by slice name.
func slicesYAML(all []matrixSlice, change func(name string, eps []endpoint) []endpoint) string {
	var docs []string
	for _, s := range all {
		eps := s.endpoints
		if change != nil {
			eps = change(s.name, eps)
		}
		docs = append(docs, sliceYAML(s.service, s.name, s.ports, eps))
	}
	return strings.Join(docs, "---\n")
}
