package model

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
)

// DefaultAffinityTimeoutSeconds is the ClientIP affinity timeout when the
// service does not set one.
const DefaultAffinityTimeoutSeconds = corev1.DefaultClientIPServiceAffinitySeconds

// BuildNodeView computes the service ports the family's proxier on node
// programs, read as the newest release does. family is "IPv4" or "IPv6".
// A node missing from c.Nodes is not an error: the view then has no node
// IPs and no zone.
func BuildNodeView(c *snapshot.Cluster, node, family string) (*NodeView, error) {
	return BuildNodeViewWith(c, node, family, NewestTopology())
}

// BuildNodeViewWith is BuildNodeView for a release that reads topology
// hints by topo.
func BuildNodeViewWith(c *snapshot.Cluster, node, family string, topo Topology) (*NodeView, error) {
	if c == nil {
		return nil, errors.New("build node view: no cluster objects")
	}
	if node == "" {
		return nil, errors.New("build node view: empty node name")
	}
	fam, err := checkFamily(family)
	if err != nil {
		return nil, fmt.Errorf("build node view for %s: %w", node, err)
	}

	v := &NodeView{Node: node, Family: family}
	for i := range c.Nodes {
		if c.Nodes[i].Name == node {
			v.NodeIPs = nodeIPs(&c.Nodes[i], fam)
			v.PodCIDRs = podCIDRs(&c.Nodes[i], fam)
			v.Zone = c.Nodes[i].Labels[corev1.LabelTopologyZone]
			break
		}
	}

	src := newEndpointSources(c, fam, node)
	for i := range c.Services {
		svc := &c.Services[i]
		if sk, skip := skipReason(svc, fam); skip {
			v.Skipped = append(v.Skipped, sk)
			if sk.Damaged {
				v.Notes = append(v.Notes, fmt.Sprintf("Service %s: %s: left out of the %s view; the other Services are checked", sk.Service, sk.Reason, fam))
			}
			continue
		}
		source := src.source(svc)
		v.Notes = append(v.Notes, src.notes(svc, fam, source)...)
		v.Notes = append(v.Notes, unusableValues(svc)...)
		clusterIP, _ := clusterIPOfFamily(svc, fam)
		for j := range svc.Spec.Ports {
			sp := newServicePort(svc, &svc.Spec.Ports[j], fam, clusterIP)
			sp.EndpointSource = source
			sp.Endpoints = src.endpoints(source, portKey{sp.Namespace, sp.Name, sp.PortName, sp.Protocol})
			r := categorize(sp.Endpoints, sp.UsesClusterEndpoints(), sp.UsesLocalEndpoints(), node, v.Zone, topo, hintsAnnotated(svc))
			sp.ClusterEndpoints, sp.LocalEndpoints = r.cluster, r.local
			sp.HasAnyEndpoints, sp.TopologyMode = r.hasAny, r.topologyMode
			sp.TopologyByRelease = r.otherRelease
			v.Ports = append(v.Ports, sp)
		}
	}

	slices.SortStableFunc(v.Ports, func(a, b ServicePort) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.PortName, b.PortName),
			cmp.Compare(a.Protocol, b.Protocol),
		)
	})
	slices.SortStableFunc(v.Skipped, func(a, b Skipped) int {
		return cmp.Compare(a.Service, b.Service)
	})
	slices.Sort(v.Notes)
	if note := src.onlyNote(v); note != "" {
		v.Notes = append([]string{note}, v.Notes...)
	}
	return v, nil
}

// hintsAnnotated says the Service's topology annotation enables hints for
// a release that asks for it (v1.30): the older
// service.kubernetes.io/topology-aware-hints when present, else
// service.kubernetes.io/topology-mode, with a value other than "",
// "disabled" and "Disabled".
func hintsAnnotated(svc *corev1.Service) bool {
	v, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v = svc.Annotations[corev1.AnnotationTopologyMode]
	}
	return v != "" && v != "disabled" && v != "Disabled"
}

// skipReason says why the family's proxier ignores a service, if it
// does; Damaged when it is the objects' fault (a value the API server
// refuses).
func skipReason(svc *corev1.Service, fam corev1.IPFamily) (Skipped, bool) {
	sk := Skipped{Service: svc.Namespace + "/" + svc.Name}
	clusterIP, bad := "", ""
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != "" {
		clusterIP, bad = clusterIPOfFamily(svc, fam)
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		sk.Reason = "ExternalName: DNS CNAME to " + svc.Spec.ExternalName + "; no node rules"
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		sk.Reason = "headless: DNS returns endpoint addresses; no node rules"
	case svc.Spec.ClusterIP == "":
		sk.Reason = "no cluster IP allocated; no node rules"
	case bad != "":
		sk.Reason, sk.Damaged = bad, true
	case clusterIP == "":
		fams := make([]string, 0, len(svc.Spec.IPFamilies))
		for _, f := range svc.Spec.IPFamilies {
			fams = append(fams, string(f))
		}
		if len(fams) == 0 {
			fams = append(fams, "cluster IP "+svc.Spec.ClusterIP)
		}
		sk.Reason = fmt.Sprintf("no %s cluster IP (%s): the %s proxier ignores it", fam, strings.Join(fams, ","), fam)
	default:
		return Skipped{}, false
	}
	return sk, true
}

// newServicePort fills the per-port fields of one family (no endpoints).
func newServicePort(svc *corev1.Service, p *corev1.ServicePort, fam corev1.IPFamily, clusterIP string) ServicePort {
	proto := string(p.Protocol)
	if proto == "" {
		proto = string(corev1.ProtocolTCP)
	}
	sp := ServicePort{
		Namespace:                svc.Namespace,
		Name:                     svc.Name,
		PortName:                 p.Name,
		Protocol:                 proto,
		Port:                     p.Port,
		NodePort:                 p.NodePort,
		TargetPort:               p.TargetPort,
		ClusterIP:                clusterIP,
		ExternalIPs:              ipsOfFamily(svc.Spec.ExternalIPs, fam),
		LoadBalancerIPs:          loadBalancerVIPs(svc, fam),
		LoadBalancerSourceRanges: sourceRangesOfFamily(svc.Spec.LoadBalancerSourceRanges, fam),
		InternalPolicyLocal: svc.Spec.InternalTrafficPolicy != nil &&
			*svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
	}
	sp.ExternallyAccessible = sp.NodePort != 0 || len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerIPs) > 0
	etpLocal := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	sp.ExternalPolicyLocal = sp.ExternallyAccessible && etpLocal
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && etpLocal {
		sp.HealthCheckNodePort = svc.Spec.HealthCheckNodePort
	}
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		sp.AffinityTimeoutSeconds = DefaultAffinityTimeoutSeconds
		if cfg := svc.Spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil {
			sp.AffinityTimeoutSeconds = *cfg.ClientIP.TimeoutSeconds
		}
	}
	return sp
}
