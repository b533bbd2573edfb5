//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/internal/wording"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// endpointsDiff is where a Service's EndpointSlices and its v1 Endpoints
// object disagree. Each list holds endpoint labels ("10.0.0.1:8080
// (http/TCP)"), sorted.
type endpointsDiff struct {
	object *corev1.Endpoints
	slices []*discoveryv1.EndpointSlice
	// onlySlices and onlyEndpoints are endpoints one side lacks.
	onlySlices, onlyEndpoints []string
	// readyInSlices are ready in the slices and not ready in the Endpoints
	// object; readyInEndpoints the other way round.
	readyInSlices, readyInEndpoints []string
	// cutOff counts slice endpoints missing from an Endpoints object the
	// controller truncated: the truncation, not a disagreement.
	cutOff int
	// mirrored: a slice was written by the EndpointSlice mirroring
	// controller.
	mirrored bool
}

// disagree reports a difference other than truncation.
func (d *endpointsDiff) disagree() bool {
	return len(d.onlySlices)+len(d.onlyEndpoints)+len(d.readyInSlices)+len(d.readyInEndpoints) > 0
}

// sliceState is one slice endpoint as the comparison needs it.
type sliceState struct{ ready, terminating bool }

// compareEndpoints compares a Service's EndpointSlices (ess, by name) with
// its v1 Endpoints object obj, for one family ("" for both). It returns nil when the
// Service lacks either, or when its Endpoints object cannot hold that
// family. A terminating slice endpoint missing from the Endpoints object
// is no disagreement: the Endpoints controller leaves terminating pods out.
func compareEndpoints(obj *corev1.Endpoints, ess []*discoveryv1.EndpointSlice, svc *corev1.Service, family corev1.IPFamily) *endpointsDiff {
	if obj == nil || len(ess) == 0 {
		return nil
	}
	if only := controllerFamily(svc); only != "" {
		if family != "" && family != only {
			return nil
		}
		family = only
	}
	d := &endpointsDiff{object: obj, slices: ess}
	fromSlices := map[string]sliceState{}
	for _, es := range ess {
		if es.Labels[discoveryv1.LabelManagedBy] == managedByMirroring {
			d.mirrored = true
		}
		if !familyWanted(string(es.AddressType), family) {
			continue
		}
		for _, p := range es.Ports {
			if p.Port == nil || *p.Port == 0 {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			for i := range es.Endpoints {
				ep, ok := makeEndpoint(&es.Endpoints[i], *p.Port, es.Name, "")
				if !ok {
					continue
				}
				label := endpointLabel(ep, name, protocolOrTCP(p.Protocol))
				if old, seen := fromSlices[label]; !seen || ep.Ready && !old.ready {
					fromSlices[label] = sliceState{ready: ep.Ready, terminating: ep.Terminating}
				}
			}
		}
	}
	fromObject := map[string]bool{}
	for _, ss := range obj.Subsets {
		for _, p := range ss.Ports {
			if p.Port == 0 {
				continue
			}
			for _, f := range []struct {
				ready bool
				addrs []corev1.EndpointAddress
			}{{true, ss.Addresses}, {false, ss.NotReadyAddresses}} {
				for i := range f.addrs {
					ep, ok := endpointFromAddress(&f.addrs[i], f.ready, p.Port, obj.Name, "")
					if !ok {
						continue
					}
					if _, fam, _ := normalizeIP(ep.IP); !familyWanted(string(fam), family) {
						continue
					}
					label := endpointLabel(ep, p.Name, protocolOrTCP(&p.Protocol))
					fromObject[label] = fromObject[label] || f.ready
				}
			}
		}
	}

	cut := truncated(obj)
	for label, s := range fromSlices {
		ready, inObject := fromObject[label]
		switch {
		case !inObject && s.terminating:
		case !inObject && cut:
			d.cutOff++
		case !inObject:
			d.onlySlices = append(d.onlySlices, label)
		case s.ready && !ready:
			d.readyInSlices = append(d.readyInSlices, label)
		case !s.ready && ready:
			d.readyInEndpoints = append(d.readyInEndpoints, label)
		}
	}
	for label := range fromObject {
		if _, ok := fromSlices[label]; !ok {
			d.onlyEndpoints = append(d.onlyEndpoints, label)
		}
	}
	for _, l := range [][]string{d.onlySlices, d.onlyEndpoints, d.readyInSlices, d.readyInEndpoints} {
		slices.Sort(l)
	}
	return d
}

// controllerFamily is the one family the Endpoints controller writes for
// a Service with a selector: the Service's primary family (the slices of a
// dual-stack Service hold both). It is "" for a Service without selector,
// whose Endpoints object holds whatever was written to it, and when the
// family cannot be told.
func controllerFamily(svc *corev1.Service) corev1.IPFamily {
	if len(svc.Spec.Selector) == 0 {
		return ""
	}
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies[0]
	}
	if _, fam, ok := normalizeIP(svc.Spec.ClusterIP); ok {
		return fam
	}
	return ""
}

// familyWanted: family "" wants both.
func familyWanted(got string, family corev1.IPFamily) bool {
	return family == "" || got == string(family)
}

// endpointLabel names an endpoint of one service port: "10.0.0.1:8080
// (http/TCP)", or "10.0.0.1:8080 (TCP)" for an unnamed port.
func endpointLabel(ep Endpoint, port, protocol string) string {
	if port == "" {
		return ep.String() + " (" + protocol + ")"
	}
	return ep.String() + " (" + port + "/" + protocol + ")"
}

// summary lists the disagreements, as one clause per kind joined by "; ".
func (d *endpointsDiff) summary() string {
	var parts []string
	add := func(what string, labels []string) {
		if len(labels) > 0 {
			parts = append(parts, what+": "+listSome(labels, 5))
		}
	}
	add("only in the EndpointSlices", d.onlySlices)
	add("only in the Endpoints object", d.onlyEndpoints)
	add("ready in the EndpointSlices but not in the Endpoints object", d.readyInSlices)
	add("ready in the Endpoints object but not in the EndpointSlices", d.readyInEndpoints)
	return strings.Join(parts, "; ")
}

// truncation describes the cut-off endpoints of a truncated object.
func (d *endpointsDiff) truncation() string {
	verb := "are"
	if d.cutOff == 1 {
		verb = "is"
	}
	return fmt.Sprintf("%s of the EndpointSlices %s beyond the %d addresses the truncated Endpoints object keeps (%s: %s)",
		wording.Count(d.cutOff, "endpoint", "endpoints"), verb, maxEndpointsAddresses, corev1.EndpointsOverCapacity, overCapacityTruncated)
}

// listSome joins up to n items, then says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
