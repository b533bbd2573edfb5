package iptables

import (
	"slices"
	"sync"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// Plane is a parsed iptables dump as a data plane.
type Plane struct {
	// Rules are the backend's rules that kube-proxy programs (the one
	// walked); Backends all the node's, by backend (nf_tables, legacy).
	Rules    *Ruleset
	Backends map[string]*Ruleset
	// index and frontends are made on first use and kept: a recheck
	// walks one Service again on a state read once.
	index         map[*Chain]*chainIndex
	indexOnce     sync.Once
	frontends     []behavior.Frontend
	frontendsOnce sync.Once
}

var _ dataplane.Plane = (*Plane)(nil)

// Mode implements dataplane.Plane.
func (p *Plane) Mode() string { return "iptables" }

// HasKubeProxy implements dataplane.Plane.
func (p *Plane) HasKubeProxy() bool { return HasKubeChains(p.Rules) }

// Walker implements dataplane.Plane.
func (p *Plane) Walker(env *dataplane.Env) dataplane.Walker {
	p.indexOnce.Do(func() { p.index = indexChains(p.Rules) })
	return newWalker(p.Rules, env, p.index)
}

// Frontends implements dataplane.Plane.
func (p *Plane) Frontends() []behavior.Frontend {
	p.frontendsOnce.Do(func() { p.frontends = discover(p.Rules) })
	return slices.Clone(p.frontends)
}

// Checks implements dataplane.Plane.
func (p *Plane) Checks(node, mode string) []behavior.Finding { return TextChecks(p.Rules, node, mode) }

// Infer implements dataplane.Plane.
func (p *Plane) Infer() dataplane.Inferred {
	in := Infer(p.Rules)
	return dataplane.Inferred{Mode: in.Mode, ClusterCIDRs: in.ClusterCIDRs, MasqueradeBit: in.MasqueradeBit, Evidence: in.Evidence}
}

// Notes implements dataplane.Plane.
func (p *Plane) Notes() []string {
	var out []string
	for _, n := range p.Rules.Notes {
		out = append(out, n.String())
	}
	return out
}
