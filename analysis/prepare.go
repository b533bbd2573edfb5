package analysis

import (
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// Model is kube-proxy's view of one node built from the API objects alone,
// started before the node's kernel state is read: the view needs no rule,
// so it can take the CPU the dump tools leave idle while they run. Drift
// and AnalyzeWith given it (DriftOptions.Models, Options.Model) use it
// instead of building the view again; the answers are the same.
type Model struct {
	cluster      *snapshot.Cluster
	node, family string
	topo         model.Topology
	done         chan struct{}
	res          modelResult
}

// PrepareModel starts building the view of node for family from c, which
// must not change until the analysis that uses it is done, as kube-proxy
// version reads it ("": as the newest release does; an analysis of a node
// whose release reads it otherwise builds its own).
func PrepareModel(c *snapshot.Cluster, node, family, version string) *Model {
	topo := topologyOf(proxyrelease.For(version))
	m := &Model{cluster: c, node: node, family: family, topo: topo, done: make(chan struct{})}
	go func() {
		m.res = modelView(c, node, family, topo, Options{}, true)
		close(m.done)
	}()
	return m
}

// fits reports whether m is the view an analysis of node and family on c,
// for a release that reads topology hints by topo, would build; a narrowed
// analysis builds its own, of one Service.
func (m *Model) fits(c *snapshot.Cluster, node, family string, topo model.Topology, o Options) bool {
	return m.of(c, node, family) && m.topo == topo && o.Service == nil
}

// of reports whether m was prepared for node and family on c, whatever the
// release it read them as (fits tells whether it serves an analysis).
func (m *Model) of(c *snapshot.Cluster, node, family string) bool {
	return m != nil && m.cluster == c && m.node == node && m.family == family
}

// wait is the view, once built.
func (m *Model) wait() modelResult {
	<-m.done
	return m.res
}
