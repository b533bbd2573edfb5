//lint:file-ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices.

package model

import (
	"fmt"

	"github.com/svctrace/svctrace/snapshot"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// endpointsObjectCauses: EndpointsOnly, EndpointsMismatch and
// EndpointsTruncated, from the Service's v1 Endpoints object next to its
// EndpointSlices.
func endpointsObjectCauses(c *snapshot.Cluster, svc *corev1.Service) []Cause {
	obj := findEndpoints(c.Endpoints, svc.Namespace, svc.Name)
	if obj == nil {
		return nil
	}
	key := serviceKey(svc.Namespace, svc.Name)
	refs := []string{objRef("Service", svc.Namespace, svc.Name), objRef("Endpoints", obj.Namespace, obj.Name)}
	ess := serviceSlices(c, svc)
	if len(ess) == 0 && anySlices(c) {
		// Other Services have slices: kube-proxy reads those, and this
		// one has none.
		return []Cause{{
			Severity: SeverityWarning, Code: CodeEndpointsOnly,
			Message: "the Service has a v1 Endpoints object but no EndpointSlice, while other Services have slices: " + endpointsOnlyEffect(svc, obj),
			Objects: refs,
		}}
	}
	if len(ess) == 0 {
		causes := []Cause{{
			Severity: SeverityInfo, Code: CodeEndpointsOnly,
			Message: "endpoints read from the v1 Endpoints object: the Service has no EndpointSlice; " + endpointsOnlyEffect(svc, obj),
			Objects: refs,
		}}
		if truncated(obj) {
			causes = append(causes, Cause{
				Severity: SeverityWarning, Code: CodeEndpointsTruncated,
				Message: key + ": " + truncatedOnlyMessage(), Objects: refs,
			})
		}
		return causes
	}

	d := compareEndpoints(obj, ess, svc, "")
	if d == nil {
		return nil
	}
	for _, es := range ess {
		refs = append(refs, objRef("EndpointSlice", es.Namespace, es.Name))
	}
	var causes []Cause
	if d.disagree() {
		causes = append(causes, Cause{
			Severity: SeverityWarning, Code: CodeEndpointsMismatch,
			Message: fmt.Sprintf("%s: %s: %s", key, d.lead(svc), d.summary()),
			Objects: refs,
		})
	}
	if d.cutOff > 0 {
		causes = append(causes, Cause{
			Severity: SeverityInfo, Code: CodeEndpointsTruncated,
			Message: fmt.Sprintf("%s: %s; kube-proxy 1.19 and later reads the EndpointSlices, which are complete, while readers of the Endpoints object see only part", key, d.truncation()),
			Objects: refs,
		})
	}
	return causes
}

// endpointsOnlyEffect says what a Service without EndpointSlices means to
// a current kube-proxy, and why it may have none.
func endpointsOnlyEffect(svc *corev1.Service, obj *corev1.Endpoints) string {
	const recent = "kube-proxy 1.19 and later reads only EndpointSlices and would see no endpoint, and "
	switch {
	case len(svc.Spec.Selector) > 0:
		return recent + "for a Service with a selector the EndpointSlice controller should have made them"
	case obj.Labels[discoveryv1.LabelSkipMirror] == "true":
		return recent + "the object is labelled " + discoveryv1.LabelSkipMirror + "=true, so the EndpointSlice mirroring controller does not copy it into slices"
	}
	return recent + "for a Service without selector the EndpointSlice mirroring controller should have copied this object into slices: mirroring failed or has not run"
}

// countObjectEndpoints counts the distinct addresses of an Endpoints
// object, and the ready ones among them (an address ready for one port
// counts as ready).
func countObjectEndpoints(obj *corev1.Endpoints) (total, ready int) {
	readiness := map[string]bool{}
	for _, ss := range obj.Subsets {
		for _, a := range ss.Addresses {
			if ip, _, ok := normalizeIP(a.IP); ok {
				readiness[ip] = true
			}
		}
		for _, a := range ss.NotReadyAddresses {
			if ip, _, ok := normalizeIP(a.IP); ok {
				if _, seen := readiness[ip]; !seen {
					readiness[ip] = false
				}
			}
		}
	}
	for _, r := range readiness {
		if r {
			ready++
		}
	}
	return len(readiness), ready
}
