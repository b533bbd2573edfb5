package analysis

import (
	"errors"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// Recheck analyses one Service of an analysed node again, against the API
// objects c as they are now (the whole cluster, as an agent's informers
// hold it), reusing the kernel state a has read: after a Service or
// EndpointSlice changes, only that Service is modelled and walked. The
// result is narrowed to the Service (see Options.Service); its findings
// are the Service's behavioural ones: the text-level checks and conntrack
// depend on the kernel state alone, and a's still hold.
func (a *NodeAnalysis) Recheck(c *snapshot.Cluster, ref ServiceRef) (*NodeAnalysis, error) {
	if a.state == nil || a.Plane == nil {
		return nil, errors.New("recheck: the analysis was not made by Analyze (no kernel state to reuse)")
	}
	r := &NodeAnalysis{Node: a.Node, Family: a.Family, Config: a.Config, Release: a.Release, Plane: a.Plane,
		state: a.state, source: a.source, inferred: a.inferred}
	o := Options{Service: &ref}
	if err := r.behaviour(modelView(c, a.Node, a.Family, topologyOf(a.Release), o, false), o, a.space); err != nil {
		return nil, err
	}
	// A state read narrowly parses the chains a walk enters first when
	// it enters them: an error in one is the recheck's.
	if d, ok := a.Plane.(dataplane.Deferred); ok {
		if err := d.Err(); err != nil {
			return nil, err
		}
	}
	return r, nil
}
