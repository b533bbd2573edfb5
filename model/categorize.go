package model

import "slices"

// categorized is the result of categorize.
type categorized struct {
	cluster, local []Endpoint
	hasAny         bool
	topologyMode   string
	// otherRelease: a release of the window with other topology rules
	// would pick another topology mode here.
	otherRelease bool
}

// Topology is how a kube-proxy release reads topology hints.
type Topology struct {
	// ZoneHintsNeedAnnotation: zone hints are used only for a Service
	// whose topology annotation enables them (kube-proxy v1.30).
	ZoneHintsNeedAnnotation bool
	// NodeHints: node hints are used (kube-proxy v1.34 on).
	NodeHints bool
}

// NewestTopology is the newest release's reading: zone hints without an
// annotation, node hints.
func NewestTopology() Topology { return Topology{NodeHints: true} }

// topologyRules is how one Service's hints are read.
type topologyRules struct {
	zone, node bool
}

// rulesFor: annotated says the Service's topology annotation enables hints.
func (t Topology) rulesFor(annotated bool) topologyRules {
	return topologyRules{zone: annotated || !t.ZoneHintsNeedAnnotation, node: t.NodeHints}
}

// windowTopologies are the readings of the releases svctrace models:
// v1.30's, v1.31 to v1.33's, and the newest.
func windowTopologies() [3]Topology {
	return [3]Topology{{ZoneHintsNeedAnnotation: true}, {}, NewestTopology()}
}

// categorize picks the endpoints a service port uses on a node, as
// kube-proxy's CategorizeEndpoints does:
//
//   - Cluster policy (if used): Ready endpoints available for the topology
//     mode chosen from hints; if none, serving-terminating endpoints
//     anywhere (no topology filter).
//   - Local policy (if used): local Ready endpoints; if none, local
//     serving-terminating ones.
//   - hasAny: a usable endpoint exists anywhere.
//
// Non-serving terminating endpoints are never used.
func categorize(eps []Endpoint, usesCluster, usesLocal bool, node, zone string, topo Topology, annotated bool) categorized {
	var r categorized
	if len(eps) == 0 {
		return r
	}
	if usesCluster {
		hints := readHints(eps, node, zone)
		r.topologyMode = hints.mode(topo.rulesFor(annotated))
		for _, other := range windowTopologies() {
			if hints.mode(other.rulesFor(annotated)) != r.topologyMode {
				r.otherRelease = true
			}
		}
		r.cluster = filterEndpoints(eps, func(ep *Endpoint) bool {
			return ep.Ready && availableForTopology(*ep, r.topologyMode, node, zone)
		})
		if len(r.cluster) == 0 {
			r.cluster = filterEndpoints(eps, func(ep *Endpoint) bool { return servingTerminating(*ep) })
		}
		r.hasAny = len(r.cluster) > 0
	}
	if !usesLocal {
		return r
	}
	var localReady, localST bool
	for _, ep := range eps {
		switch {
		case ep.Ready:
			r.hasAny = true
			localReady = localReady || ep.Local
		case servingTerminating(ep):
			r.hasAny = true
			localST = localST || ep.Local
		}
	}
	switch {
	case localReady:
		r.local = filterEndpoints(eps, func(ep *Endpoint) bool { return ep.Local && ep.Ready })
	case localST:
		r.local = filterEndpoints(eps, func(ep *Endpoint) bool { return ep.Local && servingTerminating(*ep) })
	}
	return r
}

// servingTerminating: the fallback class of endpoints.
func servingTerminating(ep Endpoint) bool {
	return ep.Serving && ep.Terminating
}

// hintFacts are what the hints of a port's Ready endpoints say for one
// node, whichever release reads them.
type hintFacts struct {
	hasReady, allNode, forNode, allZone, forZone bool
}

// readHints reads the hints of the Ready endpoints once, for every
// release's reading of them (see mode).
func readHints(eps []Endpoint, node, zone string) hintFacts {
	h := hintFacts{allNode: true, allZone: true}
	for _, ep := range eps {
		if !ep.Ready {
			continue
		}
		h.hasReady = true
		if len(ep.HintNodes) == 0 {
			h.allNode = false
		} else if slices.Contains(ep.HintNodes, node) {
			h.forNode = true
		}
		if len(ep.HintZones) == 0 {
			h.allZone = false
		} else if slices.Contains(ep.HintZones, zone) {
			h.forZone = true
		}
	}
	return h
}

// mode decides from the hints, as the rules allow: PreferSameNode if
// every Ready endpoint has node hints and one names this node, else
// PreferSameZone if every one has zone hints and one names this node's
// zone, else no topology.
func (h hintFacts) mode(rules topologyRules) string {
	switch {
	case !h.hasReady:
		return TopologyNone
	case rules.node && h.allNode && h.forNode:
		return TopologyPreferSameNode
	case rules.zone && h.allZone && h.forZone:
		return TopologyPreferSameZone
	}
	return TopologyNone
}

// availableForTopology: may this endpoint be used under that mode.
func availableForTopology(ep Endpoint, mode, node, zone string) bool {
	switch mode {
	case TopologyNone:
		return true
	case TopologyPreferSameNode:
		return slices.Contains(ep.HintNodes, node)
	case TopologyPreferSameZone:
		return slices.Contains(ep.HintZones, zone)
	}
	return false
}

// filterEndpoints are the endpoints of eps that keep keeps: eps itself
// when it keeps them all, as it mostly does (a view's lists are read, never
// changed), and nil when none.
func filterEndpoints(eps []Endpoint, keep func(*Endpoint) bool) []Endpoint {
	n := 0
	for i := range eps {
		if keep(&eps[i]) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(eps):
		return slices.Clip(eps)
	}
	out := make([]Endpoint, 0, n)
	for i := range eps {
		if keep(&eps[i]) {
			out = append(out, eps[i])
		}
	}
	return out
}
