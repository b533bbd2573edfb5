package model

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Cause severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// Cause codes (stable).
const (
	CodeExternalName              = "ExternalName"
	CodeHeadless                  = "Headless"
	CodeNoClusterIPOfFamily       = "NoClusterIPOfFamily"
	CodeInvalidClusterIP          = "InvalidClusterIP"
	CodeNoSelector                = "NoSelector"
	CodePodsNotListed             = "PodsNotListed"
	CodeSelectorMatchesNoPods     = "SelectorMatchesNoPods"
	CodeNamedTargetPortUnresolved = "NamedTargetPortUnresolved"
	CodePodsOlderThanService      = "PodsOlderThanService"
	CodeNoEndpoints               = "NoEndpoints"
	CodeNoReadyEndpoints          = "NoReadyEndpoints"
	CodeTerminatingFallback       = "TerminatingFallback"
	CodeNoLocalEndpoints          = "NoLocalEndpoints"
	CodeEndpointsOnly             = "EndpointsOnly"
	CodeEndpointsMismatch         = "EndpointsMismatch"
	CodeEndpointsTruncated        = "EndpointsTruncated"
)

// Cause is one finding about a service from its API objects.
type Cause struct {
	// Severity is "error", "warning" or "info".
	Severity string `json:"severity"`
	// Code is a stable CamelCase identifier.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Objects name the objects concerned as "Kind namespace/name".
	Objects []string `json:"objects,omitempty"`
}

// Diagnose checks a service against its pods and EndpointSlices, and
// against the node view v (which may be nil: node checks are then
// skipped) of a kube-proxy whose mode has traits (a mode whose Local
// policy falls back to the cluster's endpoints treats a Local policy
// without local endpoints its own way). Causes come errors first, then
// warnings, then infos, each in a fixed check order.
func Diagnose(c *snapshot.Cluster, svc *corev1.Service, v *NodeView, traits ProxierTraits) []Cause {
	if svc == nil {
		return nil
	}
	if c == nil {
		c = &snapshot.Cluster{}
	}
	key := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return []Cause{{
			Severity: SeverityInfo, Code: CodeExternalName,
			Message: fmt.Sprintf("%s is an ExternalName service: DNS answers with a CNAME to %q; kube-proxy programs no rules for it", key, svc.Spec.ExternalName),
			Objects: []string{objRef("Service", svc.Namespace, svc.Name)},
		}}
	}

	var causes []Cause
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	if headless {
		causes = append(causes, Cause{
			Severity: SeverityInfo, Code: CodeHeadless,
			Message: fmt.Sprintf("%s is headless (clusterIP None): DNS returns the endpoint addresses directly; kube-proxy programs no rules for it", key),
			Objects: []string{objRef("Service", svc.Namespace, svc.Name)},
		})
	} else if v != nil {
		if sk, ok := v.Skip(svc.Namespace, svc.Name); ok {
			c := Cause{
				Severity: SeverityInfo, Code: CodeNoClusterIPOfFamily,
				Message: fmt.Sprintf("%s is not programmed in the %s view of %s: %s", key, v.Family, v.Node, sk.Reason),
				Objects: []string{objRef("Service", svc.Namespace, svc.Name)},
			}
			if sk.Damaged {
				c.Severity, c.Code = SeverityError, CodeInvalidClusterIP
				c.Message = fmt.Sprintf("%s: %s (the API server refuses such a Service: the objects given are damaged); it is left out of the %s view of %s", key, sk.Reason, v.Family, v.Node)
			}
			causes = append(causes, c)
		}
	}

	causes = append(causes, podCauses(c, svc)...)
	causes = append(causes, endpointCauses(c, svc)...)
	causes = append(causes, endpointsObjectCauses(c, svc)...)
	if v != nil && !headless {
		causes = append(causes, nodeCauses(svc, v, traits)...)
	}

	slices.SortStableFunc(causes, func(a, b Cause) int {
		return cmp.Compare(severityRank(a.Severity), severityRank(b.Severity))
	})
	return causes
}

func severityRank(s string) int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

func objRef(kind, namespace, name string) string {
	return kind + " " + namespace + "/" + name
}

// serviceSlices are the EndpointSlices tied to svc, sorted by name.
func serviceSlices(c *snapshot.Cluster, svc *corev1.Service) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i := range c.EndpointSlices {
		es := &c.EndpointSlices[i]
		if es.Namespace == svc.Namespace && es.Labels[discoveryv1.LabelServiceName] == svc.Name {
			out = append(out, es)
		}
	}
	slices.SortStableFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// endpointCauses: NoSelector, NoEndpoints, NoReadyEndpoints. The
// endpoints are the EndpointSlices', or the v1 Endpoints object's when the
// Service has no slice.
func endpointCauses(c *snapshot.Cluster, svc *corev1.Service) []Cause {
	var causes []Cause
	key := svc.Namespace + "/" + svc.Name
	ess := serviceSlices(c, svc)
	refs := []string{objRef("Service", svc.Namespace, svc.Name)}
	total, ready, terminating, servingTerminating := 0, 0, 0, 0
	obj := findEndpoints(c.Endpoints, svc.Namespace, svc.Name)
	if len(ess) > 0 {
		obj = nil
	}
	if obj != nil {
		refs = append(refs, objRef("Endpoints", obj.Namespace, obj.Name))
		total, ready = countObjectEndpoints(obj)
	}
	for _, es := range ess {
		refs = append(refs, objRef("EndpointSlice", es.Namespace, es.Name))
		for i := range es.Endpoints {
			ep, ok := makeEndpoint(&es.Endpoints[i], 0, es.Name, "")
			if !ok {
				continue
			}
			total++
			switch {
			case ep.Ready:
				ready++
			case ep.Terminating:
				terminating++
				if ep.Serving {
					servingTerminating++
				}
			}
		}
	}
	if len(svc.Spec.Selector) == 0 {
		causes = append(causes, Cause{
			Severity: SeverityInfo, Code: CodeNoSelector,
			Message: fmt.Sprintf("%s has no selector: its endpoints are managed by hand (or by another controller), not derived from pods; %s carry its %s label", key, wording.Count(len(ess), "EndpointSlice", "EndpointSlices"), discoveryv1.LabelServiceName),
			Objects: refs,
		})
	}
	switch {
	case total == 0:
		effect := "kube-proxy rejects connections to it (no endpoints)"
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			effect = "DNS returns no addresses for it"
		}
		msg := fmt.Sprintf("no EndpointSlice lists any endpoint for %s (%s found): %s", key, wording.Count(len(ess), "slice", "slices"), effect)
		switch {
		case obj != nil:
			msg = fmt.Sprintf("%s has no EndpointSlice and its v1 Endpoints object lists no endpoint: %s", key, effect)
		case len(ess) == 0 && c.EndpointsListed && findEndpoints(c.Endpoints, svc.Namespace, svc.Name) == nil:
			msg = fmt.Sprintf("%s has neither an EndpointSlice nor a v1 Endpoints object: %s", key, effect)
		}
		causes = append(causes, Cause{Severity: SeverityError, Code: CodeNoEndpoints, Message: msg, Objects: refs})
	case ready == 0:
		msg := fmt.Sprintf("%s has %s but none is ready: %d terminating (%d of them still serving), %d neither ready nor terminating",
			key, wording.Count(total, "endpoint", "endpoints"), terminating, servingTerminating, total-terminating)
		if servingTerminating > 0 {
			msg += "; kube-proxy falls back to the serving-terminating ones"
		} else {
			msg += "; kube-proxy has nothing to send traffic to and rejects connections"
		}
		causes = append(causes, Cause{Severity: SeverityError, Code: CodeNoReadyEndpoints, Message: msg, Objects: refs})
	}
	return causes
}

// nodeCauses: TerminatingFallback and NoLocalEndpoints, per service port
// of the view.
func nodeCauses(svc *corev1.Service, v *NodeView, traits ProxierTraits) []Cause {
	var causes []Cause
	ref := []string{objRef("Service", svc.Namespace, svc.Name)}
	for _, p := range v.Find(svc.Namespace, svc.Name) {
		name := p.SPN() + "/" + p.Protocol
		if notReady(p.ClusterEndpoints) {
			causes = append(causes, Cause{
				Severity: SeverityWarning, Code: CodeTerminatingFallback,
				Message: fmt.Sprintf("%s has no ready endpoint in the cluster: kube-proxy uses the serving-terminating endpoints %s", name, endpointList(p.ClusterEndpoints)),
				Objects: ref,
			})
		}
		if notReady(p.LocalEndpoints) {
			causes = append(causes, Cause{
				Severity: SeverityWarning, Code: CodeTerminatingFallback,
				Message: fmt.Sprintf("%s has no ready endpoint on node %s: Local-policy traffic goes to the serving-terminating local endpoints %s", name, v.Node, endpointList(p.LocalEndpoints)),
				Objects: ref,
			})
		}
		if !p.HasAnyEndpoints || len(p.LocalEndpoints) > 0 {
			continue
		}
		if p.InternalPolicyLocal {
			fate := "are dropped, although endpoints exist on other nodes"
			if traits.LocalFallback {
				// The mode falls back to the cluster's endpoints, which
				// a Service reached only inside the cluster has none of.
				fate = "are rejected, although endpoints exist on other nodes"
				if traits.EmptyFrontend != "" {
					fate = "are rejected (" + traits.EmptyFrontend + "), although endpoints exist on other nodes"
				}
				if len(p.ClusterEndpoints) > 0 {
					fate = "go to the cluster-wide endpoints instead (" + traits.Mode + " mode falls back to them)"
				}
			}
			causes = append(causes, Cause{
				Severity: SeverityWarning, Code: CodeNoLocalEndpoints,
				Message: fmt.Sprintf("%s has internalTrafficPolicy Local and node %s has no local endpoint: connections from this node to ClusterIP %s %s", name, v.Node, hostPort(p.ClusterIP, p.Port), fate),
				Objects: ref,
			})
		}
		if p.ExternalPolicyLocal {
			msg := fmt.Sprintf("%s has externalTrafficPolicy Local and node %s has no local endpoint: external traffic arriving at this node (%s) is dropped; connections from pods or the node itself to those addresses are short-circuited to cluster-wide endpoints", name, v.Node, externalDestinations(&p))
			if traits.LocalFallback {
				msg = fmt.Sprintf("%s has externalTrafficPolicy Local and node %s has no local endpoint: %s mode sends traffic arriving at this node (%s) to the cluster-wide endpoints, unmasqueraded, so an endpoint on another node answers the client from its own address and an external client drops the reply", name, v.Node, traits.Mode, externalDestinations(&p))
			}
			if p.HealthCheckNodePort != 0 {
				msg += fmt.Sprintf("; the health check on node port %d reports no local endpoints, so load balancers should stop sending traffic here", p.HealthCheckNodePort)
			}
			causes = append(causes, Cause{Severity: SeverityWarning, Code: CodeNoLocalEndpoints, Message: msg, Objects: ref})
		}
	}
	return causes
}

// notReady: a non-empty list without a ready endpoint (the fallback).
func notReady(eps []Endpoint) bool {
	if len(eps) == 0 {
		return false
	}
	for _, ep := range eps {
		if ep.Ready {
			return false
		}
	}
	return true
}

func endpointList(eps []Endpoint) string {
	s := make([]string, len(eps))
	for i, ep := range eps {
		s[i] = ep.String()
	}
	return strings.Join(s, ", ")
}

// externalDestinations describes how external traffic reaches the port.
func externalDestinations(p *ServicePort) string {
	var parts []string
	if p.NodePort != 0 {
		parts = append(parts, fmt.Sprintf("NodePort %d", p.NodePort))
	}
	for _, ip := range p.ExternalIPs {
		parts = append(parts, "external IP "+hostPort(ip, p.Port))
	}
	for _, ip := range p.LoadBalancerIPs {
		parts = append(parts, "load-balancer IP "+hostPort(ip, p.Port))
	}
	return strings.Join(parts, ", ")
}

func hostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
