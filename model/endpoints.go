package model

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// portKey names one service port the way kube-proxy joins services and
// EndpointSlices: namespace, service name, port name and protocol.
type portKey struct {
	namespace, service, port, protocol string
}

// protocolOrTCP applies the API default protocol.
func protocolOrTCP(p *corev1.Protocol) string {
	if p == nil || *p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(*p)
}

// endpointsByPort groups the endpoints of all slices of one family by
// service port, the way kube-proxy's EndpointSliceCache does: slices are
// tied to their Service by the kubernetes.io/service-name label, endpoint
// ports are the slice's ports matched by name and protocol, only
// addresses[0] is used, and duplicates are merged preferring a
// non-terminating endpoint. Each list is sorted by String().
func endpointsByPort(all []discoveryv1.EndpointSlice, family corev1.IPFamily, node string) map[portKey][]Endpoint {
	ordered := make([]*discoveryv1.EndpointSlice, 0, len(all))
	for i := range all {
		if string(all[i].AddressType) == string(family) {
			ordered = append(ordered, &all[i])
		}
	}
	// Fixed order so that merging duplicates is deterministic.
	slices.SortStableFunc(ordered, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	// Each port's endpoints in slice order, keyed by their string; a
	// port's list is looked up once per slice, not per endpoint.
	at := map[portKey]int{}
	var lists [][]keyedEndpoint
	var keys []portKey
	for _, es := range ordered {
		svcName := es.Labels[discoveryv1.LabelServiceName]
		if svcName == "" {
			continue
		}
		for _, p := range es.Ports {
			if p.Name == nil || p.Port == nil || *p.Port == 0 {
				continue
			}
			key := portKey{es.Namespace, svcName, *p.Name, protocolOrTCP(p.Protocol)}
			i, ok := at[key]
			if !ok {
				i = len(lists)
				at[key] = i
				lists = append(lists, make([]keyedEndpoint, 0, len(es.Endpoints)))
				keys = append(keys, key)
			}
			for j := range es.Endpoints {
				ep, ok := makeEndpoint(&es.Endpoints[j], *p.Port, es.Name, node)
				if !ok {
					continue
				}
				lists[i] = append(lists[i], keyedEndpoint{ep.String(), ep})
			}
		}
	}
	out := make(map[portKey][]Endpoint, len(lists))
	for i, keyed := range lists {
		out[keys[i]] = mergeDuplicates(keyed)
	}
	return out
}

// mergeDuplicates sorts a port's endpoints (in slice order) by their
// string and merges those of one string: the last that is not
// terminating wins, else the first.
func mergeDuplicates(keyed []keyedEndpoint) []Endpoint {
	slices.SortStableFunc(keyed, func(a, b keyedEndpoint) int { return cmp.Compare(a.key, b.key) })
	list := make([]Endpoint, 0, len(keyed))
	for i := 0; i < len(keyed); {
		j, pick := i+1, i
		for ; j < len(keyed) && keyed[j].key == keyed[i].key; j++ {
			if !keyed[j].ep.Terminating {
				pick = j
			}
		}
		list = append(list, keyed[pick].ep)
		i = j
	}
	return list
}

// makeEndpoint converts one slice endpoint for one port number.
func makeEndpoint(e *discoveryv1.Endpoint, port int32, slice, node string) (Endpoint, bool) {
	if len(e.Addresses) == 0 {
		return Endpoint{}, false
	}
	ip := e.Addresses[0]
	if n, _, ok := normalizeIP(ip); ok {
		ip = n
	}
	ep := Endpoint{
		IP:          ip,
		Port:        port,
		Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
		Serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
		Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
		TargetRef:   e.TargetRef,
		Slice:       slice,
	}
	if e.NodeName != nil {
		ep.NodeName = *e.NodeName
		ep.Local = node != "" && ep.NodeName == node
	}
	if e.Zone != nil {
		ep.Zone = *e.Zone
	}
	if e.Hints != nil {
		for _, z := range e.Hints.ForZones {
			ep.HintZones = append(ep.HintZones, z.Name)
		}
		for _, n := range e.Hints.ForNodes {
			ep.HintNodes = append(ep.HintNodes, n.Name)
		}
	}
	return ep, true
}

// sortEndpoints sorts by the endpoint string with plain string comparison,
// as kube-proxy does ("10.244.10.1:80" < "10.244.2.1:80").
func sortEndpoints(eps []Endpoint) {
	keyed := make([]keyedEndpoint, len(eps))
	for i, ep := range eps {
		keyed[i] = keyedEndpoint{ep.String(), ep}
	}
	sortKeyed(keyed, eps)
}

// keyedEndpoint is an endpoint with its string, the order of lists.
type keyedEndpoint struct {
	key string
	ep  Endpoint
}

// sortKeyed sorts keyed by key into out (of the same length).
func sortKeyed(keyed []keyedEndpoint, out []Endpoint) {
	slices.SortFunc(keyed, func(a, b keyedEndpoint) int { return cmp.Compare(a.key, b.key) })
	for i := range keyed {
		out[i] = keyed[i].ep
	}
}

// sortedByPort turns per-port sets of endpoints (keyed by their string)
// into sorted lists.
func sortedByPort(sets map[portKey]map[string]Endpoint) map[portKey][]Endpoint {
	out := make(map[portKey][]Endpoint, len(sets))
	var keyed []keyedEndpoint
	for key, set := range sets {
		keyed = keyed[:0]
		for s, ep := range set {
			keyed = append(keyed, keyedEndpoint{s, ep})
		}
		list := make([]Endpoint, len(keyed))
		sortKeyed(keyed, list)
		out[key] = list
	}
	return out
}
