//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// endpointSources picks, per Service, where its endpoints are read: its
// EndpointSlices when it has any (as kube-proxy 1.19 and later), else its
// v1 Endpoints object (as kube-proxy before 1.19; a capture pasted from
// `kubectl get endpoints`).
type endpointSources struct {
	withSlices  map[string]bool
	withObject  map[string]bool
	fromSlices  map[portKey][]Endpoint
	fromObjects map[portKey][]Endpoint
	// slices and objects index the Service's EndpointSlices (by name) and
	// v1 Endpoints object by serviceKey.
	slices  map[string][]*discoveryv1.EndpointSlice
	objects map[string]*corev1.Endpoints
}

func newEndpointSources(c *snapshot.Cluster, family corev1.IPFamily, node string) *endpointSources {
	s := &endpointSources{withSlices: servicesWithSlices(c.EndpointSlices), withObject: map[string]bool{},
		slices: slicesByService(c.EndpointSlices), objects: map[string]*corev1.Endpoints{}}
	for i := range c.Endpoints {
		k := serviceKey(c.Endpoints[i].Namespace, c.Endpoints[i].Name)
		if _, dup := s.objects[k]; !dup {
			s.objects[k] = &c.Endpoints[i]
		}
	}
	// kube-proxy 1.19 and later reads only EndpointSlices: where the
	// objects hold any, a Service with only an Endpoints object has no
	// endpoint for it (mirroring failed), and expecting that object's
	// addresses would report the kernel for the API's fault. The objects
	// stand in only for a cluster or a capture without EndpointSlices.
	if anySlices(c) {
		s.fromSlices = endpointsByPort(c.EndpointSlices, family, node)
		return s
	}
	for i := range c.Endpoints {
		if k := serviceKey(c.Endpoints[i].Namespace, c.Endpoints[i].Name); !s.withSlices[k] {
			s.withObject[k] = true
		}
	}
	s.fromSlices = endpointsByPort(c.EndpointSlices, family, node)
	s.fromObjects = endpointsObjectsByPort(c.Endpoints, s.withObject, family, node)
	return s
}

// source is SourceEndpointSlice, SourceEndpoints, or "" when the Service
// has neither object.
func (s *endpointSources) source(svc *corev1.Service) string {
	k := serviceKey(svc.Namespace, svc.Name)
	switch {
	case s.withSlices[k]:
		return SourceEndpointSlice
	case s.withObject[k]:
		return SourceEndpoints
	}
	return ""
}

// endpoints of one service port from the source.
func (s *endpointSources) endpoints(source string, key portKey) []Endpoint {
	switch source {
	case SourceEndpointSlice:
		return s.fromSlices[key]
	case SourceEndpoints:
		return s.fromObjects[key]
	}
	return nil
}

// onlyNote names the Services of the view whose endpoints were read from
// v1 Endpoints objects ("" if none).
func (s *endpointSources) onlyNote(v *NodeView) string {
	var names []string
	for i := range v.Ports {
		p := &v.Ports[i]
		if k := serviceKey(p.Namespace, p.Name); p.EndpointSource == SourceEndpoints && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("endpoints read from the v1 Endpoints object, as the Service has no EndpointSlice, for %s: %s (kube-proxy 1.19 and later reads only EndpointSlices)",
		wording.Count(len(names), "Service", "Services"), listSome(names, 10))
}

// endpointsNotes are the view's notes on one Service's endpoint objects:
// where its EndpointSlices and Endpoints object disagree in the family, or
// that the Endpoints object it was read from is truncated.
func (s *endpointSources) notes(svc *corev1.Service, family corev1.IPFamily, source string) []string {
	key := serviceKey(svc.Namespace, svc.Name)
	switch source {
	case SourceEndpointSlice:
		d := compareEndpoints(s.objects[key], s.slices[key], svc, family)
		switch {
		case d == nil:
		case d.disagree():
			note := fmt.Sprintf("%s: %s: %s", key, d.lead(svc), d.summary())
			if d.cutOff > 0 {
				note += "; " + d.truncation()
			}
			return []string{note}
		case d.cutOff > 0:
			return []string{fmt.Sprintf("%s: %s; the EndpointSlices, which are complete, are used", key, d.truncation())}
		}
	case SourceEndpoints:
		if obj := s.objects[key]; obj != nil && truncated(obj) {
			return []string{fmt.Sprintf("%s: %s", key, truncatedOnlyMessage())}
		}
	}
	return nil
}

// lead says which objects disagree, and what follows from it.
func (d *endpointsDiff) lead(svc *corev1.Service) string {
	if d.mirrored && len(svc.Spec.Selector) == 0 {
		lead := "the EndpointSlices mirrored from its v1 Endpoints object (by " + managedByMirroring + ") do not match it: "
		if overMirrorLimit(d.object) {
			return lead + fmt.Sprintf("the mirroring controller copies at most %d addresses of each subset, the object has more, and kube-proxy 1.19 and later follows the slices", maxEndpointsAddresses)
		}
		return lead + "mirroring failed or is behind, and kube-proxy 1.19 and later follows the slices"
	}
	return "its EndpointSlices (which kube-proxy 1.19 and later follows, and svctrace uses) and its v1 Endpoints object (which kube-proxy before 1.19 followed) disagree"
}

// overMirrorLimit: a subset has more addresses than the mirroring
// controller copies.
func overMirrorLimit(e *corev1.Endpoints) bool {
	for _, ss := range e.Subsets {
		if len(ss.Addresses)+len(ss.NotReadyAddresses) > maxEndpointsAddresses {
			return true
		}
	}
	return false
}

// truncatedOnlyMessage: the endpoints were read from a truncated object.
func truncatedOnlyMessage() string {
	return fmt.Sprintf("its v1 Endpoints object, the only source of its endpoints, is truncated to %d addresses (%s: %s): endpoints beyond them are unknown here and to a kube-proxy that reads Endpoints",
		maxEndpointsAddresses, corev1.EndpointsOverCapacity, overCapacityTruncated)
}

// slicesByService indexes EndpointSlices by their Service's serviceKey,
// each Service's sorted by name (as serviceSlices).
func slicesByService(all []discoveryv1.EndpointSlice) map[string][]*discoveryv1.EndpointSlice {
	out := map[string][]*discoveryv1.EndpointSlice{}
	for i := range all {
		if name := all[i].Labels[discoveryv1.LabelServiceName]; name != "" {
			k := serviceKey(all[i].Namespace, name)
			out[k] = append(out[k], &all[i])
		}
	}
	for _, ess := range out {
		slices.SortStableFunc(ess, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	}
	return out
}

// anySlices reports whether the cluster holds any EndpointSlice at all,
// also where c holds only some Services' objects (snapshot.Partial).
func anySlices(c *snapshot.Cluster) bool {
	return len(c.EndpointSlices) > 0 || c.Partial != nil && c.Partial.Total.EndpointSlices > 0
}
