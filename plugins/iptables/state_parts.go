package iptables

import (
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/svctrace/svctrace/dataplane"
)

// For a node agent's next observation (dataplane.ObserveMemo), a lazy read
// divides into kube-proxy's per-Service chains with rule lines, which a
// walk scope parses for the Services whose walks enter them and reports
// (AppendReads, Ruleset.scoped), and everything else, which any walk may
// read. Each such chain is a part of its own: its declaration and its rule
// lines. The rest is digested whole: every other line of the dumps, but
// their comments (a read's dates) and the chains' counters, which traffic
// moves.

var _ dataplane.PartedState = (*Plane)(nil)

// StateParts implements dataplane.PartedState for a state read lazily from
// whole dumps. An excerpt (whose walks assume what it lacks), a state read
// in full or with a digest, and walks that consult another plane's tables
// (a gate) are not divided.
func (p *Plane) StateParts(env *dataplane.Env) (dataplane.StateParts, bool) {
	parts, ok := p.stateParts()
	if !ok || p.gates != nil && p.gates.Gate(env) != nil {
		return dataplane.StateParts{}, false
	}
	return parts, true
}

// stateParts digests the walked ruleset's dumps once.
func (p *Plane) stateParts() (dataplane.StateParts, bool) {
	p.partsOnce.Do(func() {
		rs := p.Rules
		if rs == nil || rs.Excerpt != "" || len(rs.lazy) == 0 || rs.facts != nil {
			return
		}
		shared := xxhash.New()
		shared.WriteString(rs.Family + "\x00" + rs.Backend + "\x00")
		parts := map[uint64]uint64{}
		for _, st := range rs.lazy {
			digestDump(st.text, shared, parts, rs.scoped)
		}
		p.parts = &dataplane.StateParts{Shared: shared.Sum64(), Parts: parts}
	})
	if p.parts == nil {
		return dataplane.StateParts{}, false
	}
	return *p.parts, true
}

// KnownClean implements dataplane.PartedState: the per-Service chains
// whose lines are those of a chain an earlier read parsed cleanly are not
// parsed again only to answer for their lines (Ruleset.checkRest).
func (p *Plane) KnownClean(prev map[uint64]uint64) {
	parts, ok := p.stateParts()
	if !ok {
		return
	}
	clean := map[uint64]bool{}
	for id, d := range parts.Parts {
		if was, ok := prev[id]; ok && was == d {
			clean[id] = true
		}
	}
	p.Rules.clean.Store(&clean)
}

// Clean implements dataplane.PartedState.
func (p *Plane) Clean() bool {
	return p.Rules != nil && p.Rules.cleanLate()
}

// DigestText writes a dump's lines to h as a node agent's next check
// compares them (see StateParts): without comments, which hold a read's
// date, nor counters, which traffic moves. Another plane whose walks read
// this plane's rules (ipvs mode's) digests them so.
func DigestText(h *xxhash.Digest, text string) {
	digestDump(text, h, nil, func(string, string) bool { return false })
}

// digestDump digests a dump's lines: the declaration and rules of a chain
// the walks parse in their scope (scoped) into its part, every other line
// but comments into shared. The lines of a chain come together in a dump
// (iptables-save prints a chain's rules in a run): a chain's digest is
// looked up when the chain changes.
func digestDump(text string, shared *xxhash.Digest, parts map[uint64]uint64, scoped func(table, chain string) bool) {
	table, last := "", ""
	var cur *xxhash.Digest
	var chains map[string]*xxhash.Digest
	tables := map[string]map[string]*xxhash.Digest{}
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimRight(withoutCounters(line), " \t\r")
		var chain, policy string
		switch {
		case line == "" || line[0] == '#':
			continue
		case line[0] == '*':
			table, last, cur = line[1:], "", nil
			if chains = tables[table]; chains == nil {
				chains = map[string]*xxhash.Digest{}
				tables[table] = chains
			}
		case line[0] == ':':
			// ":NAME POLICY [packets:bytes]": the counters go.
			chain, policy, _ = strings.Cut(line[1:], " ")
			policy, _, _ = strings.Cut(policy, " ")
		case strings.HasPrefix(line, "-A "):
			chain = plainWord(line, len("-A "))
		}
		if chain != "" && chain != last {
			cur, last = nil, chain
			if chains != nil && scoped(table, chain) {
				if cur = chains[chain]; cur == nil {
					cur = xxhash.New()
					chains[chain] = cur
				}
			}
		}
		if chain == "" || cur == nil {
			if policy != "" {
				line = ":" + chain + " " + policy
			}
			shared.WriteString(line)
			shared.WriteString("\n")
			continue
		}
		if policy != "" {
			cur.WriteString(":" + policy + "\n")
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
	}
	for table, chains := range tables {
		for chain, h := range chains {
			// A chain in two dumps of one state (merged) is both.
			id := partID(table, chain)
			parts[id] = parts[id]*1099511628211 + h.Sum64()
		}
	}
}

// withoutCounters drops the "[packets:bytes] " a dump made with -c puts
// before a rule.
func withoutCounters(line string) string {
	if strings.HasPrefix(line, "[") {
		if i := strings.Index(line, "] "); i > 0 {
			return line[i+2:]
		}
	}
	return line
}

// partID names a per-Service chain's part.
func partID(table, chain string) uint64 {
	return xxhash.Sum64String(table + "/" + chain)
}

var _ dataplane.ScopeReads = scopedWalker{}

// AppendReads implements dataplane.ScopeReads: the per-Service chains the
// scope's walks parsed, and the parts of another plane's state they read
// (Extensions.LocalInPart).
func (s scopedWalker) AppendReads(ids []uint64) []uint64 {
	for c := range s.sc.parsed {
		ids = append(ids, partID(c.lazy.table.Name, c.Name))
	}
	return append(ids, s.sc.others...)
}

// scoped says whether the walks parse the chain in their scope, and a
// scope tells it among its reads (AppendReads): a per-Service chain with
// rule lines of a lazy read. Any other chain, a per-Service chain declared
// without rules among them, is read by the walks outside their scopes.
func (rs *Ruleset) scoped(table, chain string) bool {
	t := rs.Tables[table]
	if t == nil {
		return false
	}
	c := t.Chain(chain)
	return c != nil && c.lazy != nil && c.lazy.transient
}
