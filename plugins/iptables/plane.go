package iptables

import (
	"maps"
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
	// frontends are found on first use and kept: a recheck walks one
	// Service again on a state read once.
	frontends     []behavior.Frontend
	frontendsOnce sync.Once
	// left are the leftovers found for a mode and node (see
	// modeLeftovers): an analysis asks for the findings and for the
	// notes, and which planes hold more than the chosen one.
	leftMu sync.Mutex
	left   map[[2]string]leftovers
	// gates judges packets by other components' nftables tables (see
	// WithGate); nil: none known.
	gates dataplane.GateGiver
	// parts are the digests of the walked ruleset's dumps, made once
	// (see StateParts); nil when it cannot be divided.
	parts     *dataplane.StateParts
	partsOnce sync.Once
}

// leftovers are ModeLeftovers' answers over every backend.
type leftovers struct {
	findings []behavior.Finding
	inert    []string
}

var _ dataplane.Plane = (*Plane)(nil)

// Mode implements dataplane.Plane.
func (p *Plane) Mode() string { return "iptables" }

// HasKubeProxy implements dataplane.Plane.
func (p *Plane) HasKubeProxy() bool { return HasKubeChains(p.Rules) }

// Walker implements dataplane.Plane.
func (p *Plane) Walker(env *dataplane.Env) dataplane.Walker {
	if p.gates != nil {
		if g := p.gates.Gate(env); g != nil {
			return NewWalkerWith(p.Rules, env, Extensions{Gate: g})
		}
	}
	return NewWalker(p.Rules, env)
}

// WithGate implements dataplane.GateTaker: the walks consult g's Gate
// after the iptables tables of each hook.
func (p *Plane) WithGate(g dataplane.GateGiver) { p.gates = g }

// Frontends implements dataplane.Plane.
func (p *Plane) Frontends() []behavior.Frontend {
	p.frontendsOnce.Do(func() {
		if f := p.Rules.facts; f != nil {
			p.frontends = f.frontends
			return
		}
		p.frontends = discover(p.Rules)
	})
	return slices.Clone(p.frontends)
}

// Checks implements dataplane.Plane.
func (p *Plane) Checks(node, mode string) []behavior.Finding { return TextChecks(p.Rules, node, mode) }

// Err implements dataplane.Deferred: an error in a chain of a backend read
// by LoadNarrow, parsed when first used.
func (p *Plane) Err() error {
	for _, backend := range slices.Sorted(maps.Keys(p.Backends)) {
		if err := p.Backends[backend].Err(); err != nil {
			return err
		}
	}
	return p.Rules.Err()
}

// Infer implements dataplane.Plane.
func (p *Plane) Infer() dataplane.Inferred {
	var in Inferred
	if f := p.Rules.facts; f != nil {
		in = f.infer
		in.ClusterCIDRs, in.Evidence = slices.Clone(in.ClusterCIDRs), slices.Clone(in.Evidence)
	} else {
		in = Infer(p.Rules)
	}
	out := dataplane.Inferred{Mode: in.Mode, ClusterCIDRs: in.ClusterCIDRs, MasqueradeBit: in.MasqueradeBit, Evidence: in.Evidence}
	if in.LocalIface != "" {
		out.LocalIface(in.LocalIface, "+")
	}
	return out
}

// Notes implements dataplane.Plane.
func (p *Plane) Notes() []string {
	var out []string
	if p.Rules.Excerpt != "" {
		out = append(out, "an excerpt of the rules ("+p.Rules.Excerpt+"): a chain no rule of it jumps to may be jumped to by a rule left out, so none is reported as orphaned")
	}
	for _, n := range p.Rules.AllNotes() {
		out = append(out, n.String())
	}
	return append(out, portless(p.Rules)...)
}

var _ dataplane.Excerpter = (*Plane)(nil)

// Excerpt says why the rules walked are an excerpt ("": a whole dump).
func (p *Plane) Excerpt() string { return p.Rules.Excerpt }

var _ dataplane.BackendNamer = (*Plane)(nil)

var _ dataplane.Copies = (*Plane)(nil)

// Other is the backend whose kube-proxy chains the plane does not walk,
// when both backends hold some: the kernel runs both (BackendSplitBrain).
func (p *Plane) Other() (dataplane.Plane, string) {
	for name, rs := range p.Backends {
		if rs != p.Rules && name != "unknown" && HasKubeChains(rs) && HasKubeChains(p.Rules) {
			return &Plane{Rules: rs, Backends: map[string]*Ruleset{name: rs}}, name
		}
	}
	return nil, ""
}

// Backend is the backend of the rules walked ("legacy", "nf_tables"), or
// "" when the dump did not say.
func (p *Plane) Backend() string {
	for name, rs := range p.Backends {
		if rs == p.Rules && name != "unknown" {
			return name
		}
	}
	return ""
}
