package nftables

import (
	"github.com/cespare/xxhash/v2"

	"github.com/svctrace/svctrace/dataplane"
)

// For a node agent's next observation (dataplane.ObserveMemo), the state
// of one family divides into kube-proxy's per-Service chains (their names
// say so: perServicePrefix), which the walks of a Service's frontends
// enter and their scope tells (walkScope), and everything else, which any
// walk may read. Each per-Service chain is a part of its own: the chain and
// its rules (with the anonymous sets and maps they hold), as RenderJSON
// writes them. The rest is digested whole, as RenderJSON writes it too:
// the tables, the other chains and their rules, the named sets and maps,
// without the elements of the sets rules write to (per-client state, which
// the walks do not read, and whose timeouts run down). Counters are
// written without their values, and named counters and other objects,
// which no walk reads, are left out.

var _ dataplane.PartedState = (*Plane)(nil)

// StateParts implements dataplane.PartedState for a state read in full.
// A narrow read (LoadNarrow), or a state RenderJSON cannot write (an
// expression it keeps without understanding), is not divided.
func (p *Plane) StateParts(env *dataplane.Env) (dataplane.StateParts, bool) {
	if p.deferred != nil {
		return dataplane.StateParts{}, false
	}
	p.Walker(env) // the sets rules write to
	shared := xxhash.New()
	shared.WriteString(p.family + "\x00")
	parts := map[uint64]uint64{}
	w := &jsonWriter{}
	for _, t := range p.tables {
		w.buf = w.buf[:0]
		w.raw(t.ID())
		w.optStr(`, "comment": `, t.Comment)
		shared.Write(w.buf)
		for _, c := range t.Chains {
			w.buf = w.buf[:0]
			w.chain(t, c)
			for _, r := range c.rules() {
				w.rule(t, r)
			}
			if perServicePrefix(c.Name) != "" {
				parts[partID(t, c.Name)] = xxhash.Sum64(w.buf)
			} else {
				shared.Write(w.buf)
			}
		}
		for _, s := range t.Sets {
			w.buf = w.buf[:0]
			if p.dynamic[setRef{t, s.Name}] {
				without := *s
				without.Elements = nil
				s = &without
			}
			w.set(t, s)
			shared.Write(w.buf)
		}
	}
	if w.err != nil {
		return dataplane.StateParts{}, false
	}
	return dataplane.StateParts{Shared: shared.Sum64(), Parts: parts}, true
}

// KnownClean implements dataplane.PartedState: a state read in full has
// nothing left to read.
func (p *Plane) KnownClean(map[uint64]uint64) {}

// Clean implements dataplane.PartedState: nothing is read late.
func (p *Plane) Clean() bool { return false }

// partID names a per-Service chain's part.
func partID(t *Table, chain string) uint64 {
	return xxhash.Sum64String(t.ID() + "/" + chain)
}

var _ dataplane.ScopedWalker = (*walker)(nil)

// Scope implements dataplane.ScopedWalker: the walks of the walker it
// returns keep the chains they enter, and the ones they find lacking,
// whose per-Service chains it tells (dataplane.ScopeReads).
func (w *walker) Scope() (dataplane.Walker, func()) {
	return &walkScope{w: w, entered: map[*Chain]*Table{}}, func() {}
}

// walkScope is the walks of one Service's frontends, one goroutine's.
type walkScope struct {
	w       *walker
	entered map[*Chain]*Table
	// lacking are chains a rule named that its table lacks (hand-edited
	// input: the kernel refuses such a rule), by table.
	lacking []chainName
}

type chainName struct {
	t    *Table
	name string
}

var _ dataplane.ScopeReads = (*walkScope)(nil)

func (s *walkScope) Walk(p dataplane.Packet) []dataplane.Branch {
	return s.w.walkWith(p, dataplane.WalkOptions{}, s)
}

func (s *walkScope) WalkWith(p dataplane.Packet, o dataplane.WalkOptions) []dataplane.Branch {
	return s.w.walkWith(p, o, s)
}

// enter keeps a chain the walk enters.
func (s *walkScope) enter(t *Table, c *Chain) { s.entered[c] = t }

// lack keeps a chain a rule named that t lacks: a part whose coming
// changes the walk.
func (s *walkScope) lack(t *Table, name string) { s.lacking = append(s.lacking, chainName{t, name}) }

// AppendReads implements dataplane.ScopeReads: the per-Service chains
// entered or lacking.
func (s *walkScope) AppendReads(ids []uint64) []uint64 {
	for c, t := range s.entered {
		if perServicePrefix(c.Name) != "" {
			ids = append(ids, partID(t, c.Name))
		}
	}
	for _, l := range s.lacking {
		if perServicePrefix(l.name) != "" {
			ids = append(ids, partID(l.t, l.name))
		}
	}
	return ids
}
