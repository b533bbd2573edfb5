package model

import "strings"

// ServicePortName names one port of a Service as kube-proxy does (its
// ServicePortName): "namespace/name:port", or "namespace/name" for a
// Service's only, unnamed port. Findings, rules' comments and reports carry
// it as that string; this is the one place that takes it apart.
type ServicePortName struct {
	Namespace, Name, Port string
}

// ParseServicePortName reads "namespace/name[:port]"; a string without a
// namespace is taken as a name alone (Namespace "").
func ParseServicePortName(s string) ServicePortName {
	svc, port, _ := strings.Cut(s, ":")
	ns, name, ok := strings.Cut(svc, "/")
	if !ok {
		ns, name = "", svc
	}
	return ServicePortName{Namespace: ns, Name: name, Port: port}
}

// Service is "namespace/name", the port left out.
func (n ServicePortName) Service() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// String is the name as kube-proxy writes it.
func (n ServicePortName) String() string {
	if n.Port == "" {
		return n.Service()
	}
	return n.Service() + ":" + n.Port
}
