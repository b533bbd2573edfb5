package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// planes are the data planes a node's dumps hold for one IP family, in
// the registry's order of preference.
type planes struct {
	loaders []dataplane.Loader
	// loaded[i] is what loaders[i] found (nil: no dump of it).
	loaded []dataplane.Plane
	family string
}

// loadPlanes reads the node's dumps of one family; narrow lets a plane
// defer the parts no walk enters (see dataplane.NarrowLoader).
func loadPlanes(ns *snapshot.NodeState, family string, narrow bool) (*planes, error) {
	p := &planes{loaders: plugins.Loaders(), family: family}
	for _, l := range p.loaders {
		load := l.Load
		if nl, ok := l.(dataplane.NarrowLoader); ok && narrow {
			load = nl.LoadNarrow
		}
		pl, err := load(ns, family)
		if err != nil {
			return nil, err
		}
		p.loaded = append(p.loaded, pl)
	}
	return p, nil
}

// deferredErr is the first error a plane found in a part of its dumps it
// parsed late (nil: none).
func (p *planes) deferredErr() error {
	for _, pl := range p.loaded {
		if d, ok := pl.(dataplane.Deferred); ok {
			if err := d.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// choose picks the plane kube-proxy programs: the configured mode, else
// the first (by preference) that holds kube-proxy's objects.
func (p *planes) choose(node, mode string) (dataplane.Plane, string, error) {
	if mode != "" {
		for i, l := range p.loaders {
			if l.Mode() != mode {
				continue
			}
			if p.loaded[i] == nil {
				return nil, "", fmt.Errorf("node %s: kube-proxy runs in %s mode, but the snapshot holds no %s", node, mode, l.Wants(p.family))
			}
			return p.loaded[i], "", nil
		}
		return nil, "", fmt.Errorf("node %s: kube-proxy runs in %s mode, which this svctrace cannot read yet", node, mode)
	}
	var holding, modes, wants []string
	var chosen dataplane.Plane
	for i, l := range p.loaders {
		modes = append(modes, l.Mode())
		wants = append(wants, l.Wants(p.family))
		if pl := p.loaded[i]; pl != nil && pl.HasKubeProxy() {
			holding = append(holding, l.Mode())
			if chosen == nil {
				chosen = pl
			}
		}
	}
	if len(holding) > 1 {
		holding = p.beyond(chosen, holding, node)
	}
	switch {
	case len(holding) > 1:
		return chosen, fmt.Sprintf("kube-proxy's objects are in %s: assumed %s mode (the others are reported as leftovers); say the mode with --proxy-mode",
			strings.Join(holding, " and "), holding[0]), nil
	case chosen != nil:
		return chosen, "", nil
	}
	for i, pl := range p.loaded {
		if ex, ok := pl.(dataplane.Excerpter); ok && ex.Excerpt() != "" {
			// An excerpt may hold none of kube-proxy's rules and still
			// show what decides a Service's packets (a firewall, a
			// policy): read it for that, and say so.
			return pl, fmt.Sprintf("the %s excerpt holds none of kube-proxy's Service rules: no frontend can be read from it, only the other rules it shows", p.loaders[i].Mode()), nil
		}
	}
	for _, pl := range p.loaded {
		if pl != nil {
			return nil, "", fmt.Errorf("node %s: none of %s holds kube-proxy's objects; if kube-proxy runs in another mode, this svctrace cannot read it yet (to check an empty node, give its mode with --proxy-mode)", node, strings.Join(modes, ", "))
		}
	}
	return nil, "", fmt.Errorf("node %s: the snapshot holds no %s rules of this node (no %s)", node, p.family, strings.Join(wants, ", no "))
}

// lendGates gives the chosen plane, when its walks can consult another
// plane's tables (an iptables walk the nftables tables of a firewall),
// the first other plane of the node that can judge its packets.
func (p *planes) lendGates(active dataplane.Plane) {
	t, ok := active.(dataplane.GateTaker)
	if !ok {
		return
	}
	for _, pl := range p.loaded {
		if g, ok := pl.(dataplane.GateGiver); ok && pl != active {
			t.WithGate(g)
			return
		}
	}
}

// beyond narrows the modes holding kube-proxy's objects to the chosen one
// and those holding more than the chosen mode keeps there itself (ipvs
// mode keeps iptables rules: they are no other mode's).
func (p *planes) beyond(chosen dataplane.Plane, holding []string, node string) []string {
	out := []string{chosen.Mode()}
	for i, l := range p.loaders {
		if pl := p.loaded[i]; pl != nil && pl != chosen && slices.Contains(holding, l.Mode()) && len(pl.Leftovers(node, chosen.Mode())) > 0 {
			out = append(out, l.Mode())
		}
	}
	return out
}

// checks are the findings of the planes kube-proxy does not program (its
// leftovers there) and each plane's own conflicts.
func (p *planes) checks(active dataplane.Plane, node string) []behavior.Finding {
	var out []behavior.Finding
	for _, pl := range p.loaded {
		if pl != nil {
			out = append(out, pl.Conflicts(node)...)
		}
	}
	for _, pl := range p.loaded {
		if pl != nil && pl != active {
			out = append(out, pl.Leftovers(node, active.Mode())...)
		}
	}
	return out
}

// inertLeftovers are the notes of the planes kube-proxy does not program
// on its leftovers there that act on no packet.
func (p *planes) inertLeftovers(active dataplane.Plane, node string) []string {
	var out []string
	for _, pl := range p.loaded {
		if in, ok := pl.(dataplane.InertLeftovers); ok && pl != active {
			out = append(out, in.InertLeftovers(node, active.Mode())...)
		}
	}
	return out
}

// IndexDumps has each plane index the dumps it reads (see
// dataplane.DumpIndexer), so that a binary snapshot of them answers a
// narrowed question (explain of one Service) without reading every rule.
// The snapshot's dumps must be valid (ValidateDumps).
func IndexDumps(s *snapshot.Snapshot) error {
	for _, l := range plugins.Loaders() {
		ix, ok := l.(dataplane.DumpIndexer)
		if !ok {
			continue
		}
		for i := range s.Nodes {
			ns := &s.Nodes[i]
			for j := range ns.Dumps {
				d := &ns.Dumps[j]
				index, err := ix.IndexDump(ns, d)
				if err != nil {
					return fmt.Errorf("indexing: %w", err)
				}
				if index != nil {
					d.Index = index
				}
			}
		}
	}
	return nil
}
