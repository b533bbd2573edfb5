//lint:file-ignore SA1019 v1 Endpoints addresses are probes to avoid as well, as for EndpointSlices.

package analysis

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
)

// narrowCluster keeps of c what questions about one Service need, as a
// partial binary snapshot holds it (snapshot.Partial): every Node, the
// Service, its EndpointSlices and v1 Endpoints object, the Pods of its
// namespace, and in Partial what the whole cluster holds beyond them. A
// cluster that is already partial is returned as it is. Without full,
// Partial.EndpointAddrs and Partial.ServiceNames are left empty (a recheck
// knows the addresses and has resolved the name).
func narrowCluster(c *snapshot.Cluster, ref ServiceRef, full bool) *snapshot.Cluster {
	if c == nil || c.Partial != nil {
		return c
	}
	out := &snapshot.Cluster{Nodes: c.Nodes, PodsListed: c.PodsListed, EndpointsListed: c.EndpointsListed}
	p := &snapshot.Partial{
		Services: []types.NamespacedName{{Namespace: ref.Namespace, Name: ref.Name}},
		Total: snapshot.Counts{Nodes: len(c.Nodes), Services: len(c.Services), EndpointSlices: len(c.EndpointSlices),
			Endpoints: len(c.Endpoints), Pods: len(c.Pods)},
		NamespacePods: map[string]int{},
	}
	mine := func(ns, name string) bool { return ns == ref.Namespace && name == ref.Name }
	for i := range c.Services {
		s := &c.Services[i]
		if full {
			p.ServiceNames = append(p.ServiceNames, s.Namespace+"/"+s.Name)
		}
		if mine(s.Namespace, s.Name) {
			out.Services = append(out.Services, *s)
		}
	}
	slices.Sort(p.ServiceNames)
	p.ServiceNames = slices.Compact(p.ServiceNames)
	seen := map[netip.Addr]bool{}
	for i := range c.EndpointSlices {
		es := &c.EndpointSlices[i]
		if mine(es.Namespace, es.Labels[discoveryv1.LabelServiceName]) {
			out.EndpointSlices = append(out.EndpointSlices, *es)
		}
		for _, e := range es.Endpoints {
			if full && len(e.Addresses) > 0 {
				if a, err := netip.ParseAddr(e.Addresses[0]); err == nil {
					seen[a] = true
				}
			}
		}
	}
	for i := range c.Endpoints {
		ep := &c.Endpoints[i]
		if mine(ep.Namespace, ep.Name) {
			out.Endpoints = append(out.Endpoints, *ep)
		}
		for _, ss := range ep.Subsets {
			if !full {
				break
			}
			for _, list := range [][]string{ipsOf(ss.Addresses), ipsOf(ss.NotReadyAddresses)} {
				for _, s := range list {
					if a, err := netip.ParseAddr(s); err == nil {
						seen[a] = true
					}
				}
			}
		}
	}
	for i := range c.Pods {
		if c.Pods[i].Namespace == ref.Namespace {
			out.Pods = append(out.Pods, c.Pods[i])
			p.NamespacePods[ref.Namespace]++
		}
	}
	for a := range seen {
		p.EndpointAddrs = append(p.EndpointAddrs, a)
	}
	slices.SortFunc(p.EndpointAddrs, netip.Addr.Compare)
	out.Partial = p
	return out
}

func ipsOf(as []corev1.EndpointAddress) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.IP)
	}
	return out
}
