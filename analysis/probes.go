package analysis

import "github.com/svctrace/svctrace/behavior"

// ProbeSpace is the address space the node's walks took their probe
// sources from (the cluster CIDRs, the node's addresses, and the endpoint
// addresses no probe may use), so that a walk of one packet (trace) can
// ask what explain asked.
func (a *NodeAnalysis) ProbeSpace() behavior.ProbeSpace {
	if a.space == nil {
		return behavior.ProbeSpace{}
	}
	return *a.space
}
