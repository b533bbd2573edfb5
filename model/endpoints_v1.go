//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Where a service port's endpoints were read (ServicePort.EndpointSource).
const (
	SourceEndpointSlice = "EndpointSlice"
	SourceEndpoints     = "Endpoints"
)

// Labels and annotations of the EndpointSlice mirroring and Endpoints
// controllers.
const (
	// managedByMirroring is the endpointslice.kubernetes.io/managed-by
	// value of slices mirrored from a selector-less Service's Endpoints.
	managedByMirroring = "endpointslicemirroring-controller.k8s.io"
	// overCapacityTruncated is the value of the over-capacity annotation
	// on an Endpoints object the controller cut to 1000 addresses.
	overCapacityTruncated = "truncated"
	// maxEndpointsAddresses is how many addresses the Endpoints
	// controller keeps in one object.
	maxEndpointsAddresses = 1000
)

// serviceKey is "namespace/name".
func serviceKey(namespace, name string) string {
	return namespace + "/" + name
}

// servicesWithSlices is the set of Services (by serviceKey) that at least
// one EndpointSlice of any address type is tied to.
func servicesWithSlices(all []discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for i := range all {
		if name := all[i].Labels[discoveryv1.LabelServiceName]; name != "" {
			out[serviceKey(all[i].Namespace, name)] = true
		}
	}
	return out
}

// findEndpoints returns the v1 Endpoints object of a Service (nil if none).
func findEndpoints(all []corev1.Endpoints, namespace, name string) *corev1.Endpoints {
	for i := range all {
		if all[i].Namespace == namespace && all[i].Name == name {
			return &all[i]
		}
	}
	return nil
}

// truncated reports whether the Endpoints controller cut the object to
// its capacity.
func truncated(e *corev1.Endpoints) bool {
	return e.Annotations[corev1.EndpointsOverCapacity] == overCapacityTruncated
}

// endpointsObjectsByPort converts the v1 Endpoints objects of the Services
// in use (by serviceKey) into endpoints of one family by service port, the
// way kube-proxy before 1.19 read them and the EndpointSlice mirroring
// controller copies them: an Endpoints object belongs to the Service of its
// name; each subset's ports (matched by name and protocol) apply to each of
// its addresses; addresses are ready (and serving), notReadyAddresses are
// neither; none is terminating (the controller leaves terminating pods
// out); the family is the address's. Duplicates are merged preferring a
// ready one. Each list is sorted by String().
func endpointsObjectsByPort(all []corev1.Endpoints, use map[string]bool, family corev1.IPFamily, node string) map[portKey][]Endpoint {
	ordered := make([]*corev1.Endpoints, 0, len(all))
	for i := range all {
		if use[serviceKey(all[i].Namespace, all[i].Name)] {
			ordered = append(ordered, &all[i])
		}
	}
	slices.SortStableFunc(ordered, func(a, b *corev1.Endpoints) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	sets := map[portKey]map[string]Endpoint{}
	for _, e := range ordered {
		for _, ss := range e.Subsets {
			for _, p := range ss.Ports {
				if p.Port == 0 {
					continue
				}
				key := portKey{e.Namespace, e.Name, p.Name, protocolOrTCP(&p.Protocol)}
				set := sets[key]
				if set == nil {
					set = map[string]Endpoint{}
					sets[key] = set
				}
				for _, a := range ss.Addresses {
					addEndpointsAddress(set, &a, true, p.Port, e.Name, family, node)
				}
				for _, a := range ss.NotReadyAddresses {
					addEndpointsAddress(set, &a, false, p.Port, e.Name, family, node)
				}
			}
		}
	}

	return sortedByPort(sets)
}

// addEndpointsAddress adds one address of an Endpoints subset for one port
// number to set, if it is of the family; a ready entry replaces a not-ready
// one of the same address and port.
func addEndpointsAddress(set map[string]Endpoint, a *corev1.EndpointAddress, ready bool, port int32, object string, family corev1.IPFamily, node string) {
	ep, ok := endpointFromAddress(a, ready, port, object, node)
	if !ok {
		return
	}
	if _, fam, _ := normalizeIP(ep.IP); fam != family {
		return
	}
	s := ep.String()
	if old, exists := set[s]; !exists || ready && !old.Ready {
		set[s] = ep
	}
}

// endpointFromAddress converts one Endpoints address for one port number;
// ok is false when the address is not an IP.
func endpointFromAddress(a *corev1.EndpointAddress, ready bool, port int32, object, node string) (Endpoint, bool) {
	ip, _, ok := normalizeIP(a.IP)
	if !ok {
		return Endpoint{}, false
	}
	ep := Endpoint{
		IP:              ip,
		Port:            port,
		Ready:           ready,
		Serving:         ready,
		TargetRef:       a.TargetRef,
		EndpointsObject: object,
	}
	if a.NodeName != nil {
		ep.NodeName = *a.NodeName
		ep.Local = node != "" && ep.NodeName == node
	}
	return ep, true
}
