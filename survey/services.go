package survey

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// Service is one row of the Services screen: what the API says of a
// Service and which nodes disagree with it.
type Service struct {
	Namespace, Name string
	// Type is ClusterIP, NodePort, LoadBalancer, ExternalName, or
	// Headless for a ClusterIP Service without a cluster IP.
	Type string
	// Frontends are the addresses clients reach it on, as ip:port/proto
	// (a NodePort as :port/proto).
	Frontends []string
	// Ready, Serving and Total count its endpoints across its
	// EndpointSlices of the survey's family.
	Ready, Serving, Total int
	// Findings counts its drift findings; Nodes are the nodes they are
	// on, sorted. Pending counts the differences that wait for
	// kube-proxy's sync of a change (Options.Changed).
	Findings, Pending int
	Nodes             []string
}

// Ref is the Service's reference.
func (s Service) Ref() analysis.ServiceRef {
	return analysis.ServiceRef{Namespace: s.Namespace, Name: s.Name}
}

// Services lists the cluster's Services, in namespace (all when empty),
// sorted by namespace and name.
func (v *Survey) Services(namespace string) []Service {
	c := v.snap.Cluster
	if c == nil {
		return nil
	}
	counts := v.endpointCounts()
	// The findings by Service, once, rather than all of them per row.
	type tally struct {
		findings, pending int
		nodes             map[string]bool
	}
	tallies := map[string]*tally{}
	tallyOf := func(spn string) *tally {
		k := model.ParseServicePortName(spn).Service()
		if tallies[k] == nil {
			tallies[k] = &tally{nodes: map[string]bool{}}
		}
		return tallies[k]
	}
	for _, f := range v.findings {
		t := tallyOf(f.Service)
		t.findings++
		t.nodes[f.Node] = true
	}
	for _, f := range v.pending {
		tallyOf(f.Service).pending++
	}
	var out []Service
	for i := range c.Services {
		svc := &c.Services[i]
		if namespace != "" && svc.Namespace != namespace {
			continue
		}
		row := Service{Namespace: svc.Namespace, Name: svc.Name, Type: serviceType(svc), Frontends: frontends(svc)}
		n := counts[svc.Namespace+"/"+svc.Name]
		row.Ready, row.Serving, row.Total = n.ready, n.serving, n.total
		if t := tallies[svc.Namespace+"/"+svc.Name]; t != nil {
			row.Findings, row.Pending = t.findings, t.pending
			for n := range t.nodes {
				row.Nodes = append(row.Nodes, n)
			}
			sort.Strings(row.Nodes)
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Namespaces lists the namespaces that hold Services, sorted.
func (v *Survey) Namespaces() []string {
	if v.snap.Cluster == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range v.snap.Cluster.Services {
		if !seen[s.Namespace] {
			seen[s.Namespace] = true
			out = append(out, s.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

func serviceType(svc *corev1.Service) string {
	t := string(svc.Spec.Type)
	if t == "" {
		t = string(corev1.ServiceTypeClusterIP)
	}
	if t == string(corev1.ServiceTypeClusterIP) && svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "Headless"
	}
	return t
}

// frontends are the Service's addresses and ports as clients use them.
func frontends(svc *corev1.Service) []string {
	var out []string
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var lbs []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			lbs = append(lbs, in.IP)
		}
	}
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		for _, ip := range ips {
			if ip != corev1.ClusterIPNone {
				out = append(out, hostPort(ip, p.Port, proto))
			}
		}
		if p.NodePort != 0 {
			out = append(out, fmt.Sprintf(":%d/%s", p.NodePort, proto))
		}
		for _, ip := range svc.Spec.ExternalIPs {
			out = append(out, hostPort(ip, p.Port, proto))
		}
		for _, ip := range lbs {
			out = append(out, hostPort(ip, p.Port, proto))
		}
	}
	return out
}

func hostPort(ip string, port int32, proto string) string {
	if strings.Contains(ip, ":") {
		return fmt.Sprintf("[%s]:%d/%s", ip, port, proto)
	}
	return fmt.Sprintf("%s:%d/%s", ip, port, proto)
}

type endpointCount struct{ ready, serving, total int }

// endpointCounts counts each Service's endpoints (by address, across its
// slices of the survey's family): ready and serving as the conditions
// say, an unset condition counting as true, as the API defines it.
func (v *Survey) endpointCounts() map[string]endpointCount {
	family := discoveryv1.AddressTypeIPv4
	if v.family == "IPv6" {
		family = discoveryv1.AddressTypeIPv6
	}
	type seenKey struct{ svc, addr string }
	seen := map[seenKey]bool{}
	out := map[string]endpointCount{}
	for _, es := range v.snap.Cluster.EndpointSlices {
		name := es.Labels[discoveryv1.LabelServiceName]
		if name == "" || es.AddressType != family {
			continue
		}
		key := es.Namespace + "/" + name
		for _, ep := range es.Endpoints {
			if len(ep.Addresses) == 0 || seen[seenKey{key, ep.Addresses[0]}] {
				continue
			}
			seen[seenKey{key, ep.Addresses[0]}] = true
			n := out[key]
			n.total++
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				n.ready++
			}
			if ep.Conditions.Serving == nil || *ep.Conditions.Serving {
				n.serving++
			}
			out[key] = n
		}
	}
	return out
}

// FindingsOf are a Service's findings on one node (every node when node
// is empty), and its pending differences there.
func (v *Survey) FindingsOf(ref analysis.ServiceRef, node string) (drift, pending []behavior.Finding) {
	of := func(fs []behavior.Finding) []behavior.Finding {
		var out []behavior.Finding
		for _, f := range fs {
			if ref.Matches(f.Service) && (node == "" || f.Node == node) {
				out = append(out, f)
			}
		}
		return out
	}
	return of(v.findings), of(v.pending)
}
