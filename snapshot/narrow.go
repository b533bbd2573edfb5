//lint:file-ignore SA1019 v1 Endpoints objects are narrowed like EndpointSlices: partial snapshots hold both.

package snapshot

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Narrow is the cluster as a partial load of a binary snapshot for these
// Services holds it (see Partial), made from a whole cluster in memory: a
// YAML snapshot, or the objects listed from the API, answer a question
// about one Service as a .snap file does. Without full, the Partial's
// EndpointAddrs and ServiceNames stay empty (for a caller that knows the
// addresses and has resolved the names: a recheck). A cluster already
// partial is returned as it is.
func (c *Cluster) Narrow(services []types.NamespacedName, full bool) *Cluster {
	if c == nil || c.Partial != nil {
		return c
	}
	out := &Cluster{Nodes: c.Nodes, PodsListed: c.PodsListed, EndpointsListed: c.EndpointsListed}
	p := &Partial{
		Services:      slices.Clone(services),
		Total:         Counts{Nodes: len(c.Nodes), Services: len(c.Services), EndpointSlices: len(c.EndpointSlices), Endpoints: len(c.Endpoints), Pods: len(c.Pods)},
		NamespacePods: map[string]int{},
	}
	want := map[types.NamespacedName]bool{}
	for _, s := range services {
		want[s] = true
		p.NamespacePods[s.Namespace] = 0
	}
	for i := range c.Services {
		s := &c.Services[i]
		if want[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] {
			out.Services = append(out.Services, *s)
		}
		if full {
			p.ServiceNames = append(p.ServiceNames, s.Namespace+"/"+s.Name)
		}
	}
	slices.Sort(p.ServiceNames)
	p.ServiceNames = slices.Compact(p.ServiceNames)
	for i := range c.EndpointSlices {
		es := &c.EndpointSlices[i]
		if want[types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}] {
			out.EndpointSlices = append(out.EndpointSlices, *es)
		}
	}
	for i := range c.Endpoints {
		if want[types.NamespacedName{Namespace: c.Endpoints[i].Namespace, Name: c.Endpoints[i].Name}] {
			out.Endpoints = append(out.Endpoints, c.Endpoints[i])
		}
	}
	pods := referencedPods(out)
	for i := range c.Pods {
		pod := &c.Pods[i]
		if _, counted := p.NamespacePods[pod.Namespace]; counted {
			p.NamespacePods[pod.Namespace]++
		}
		if pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] || selectedBy(out.Services, pod) {
			out.Pods = append(out.Pods, *pod)
		}
	}
	if full {
		p.EndpointAddrs = endpointAddrs(c)
	}
	out.Partial = p
	return out
}

// referencedPods are the Pods the endpoints of c name by a targetRef.
func referencedPods(c *Cluster) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	ref := func(r *corev1.ObjectReference, namespace string) {
		if r == nil || r.Kind != "Pod" {
			return
		}
		if r.Namespace != "" {
			namespace = r.Namespace
		}
		out[types.NamespacedName{Namespace: namespace, Name: r.Name}] = true
	}
	for i := range c.EndpointSlices {
		for j := range c.EndpointSlices[i].Endpoints {
			ref(c.EndpointSlices[i].Endpoints[j].TargetRef, c.EndpointSlices[i].Namespace)
		}
	}
	for i := range c.Endpoints {
		for _, ss := range c.Endpoints[i].Subsets {
			for j := range ss.Addresses {
				ref(ss.Addresses[j].TargetRef, c.Endpoints[i].Namespace)
			}
			for j := range ss.NotReadyAddresses {
				ref(ss.NotReadyAddresses[j].TargetRef, c.Endpoints[i].Namespace)
			}
		}
	}
	return out
}

// selectedBy reports whether the selector of one of the Services, in the
// Pod's namespace, matches it (an empty selector selects nothing).
func selectedBy(svcs []corev1.Service, pod *corev1.Pod) bool {
	for i := range svcs {
		sel := svcs[i].Spec.Selector
		if svcs[i].Namespace != pod.Namespace || len(sel) == 0 {
			continue
		}
		match := true
		for k, v := range sel {
			if got, ok := pod.Labels[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
