package iptables

import (
	"errors"
	"fmt"
	"sort"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// Loader reads a node's iptables dumps (iptables-save, ip6tables-save, of
// either backend) as the iptables plane.
type Loader struct{}

var _ dataplane.Loader = Loader{}

// Mode is "iptables".
func (Loader) Mode() string { return "iptables" }

// Wants names the dump the plane reads.
func (Loader) Wants(family string) string {
	tool := "iptables-save"
	if family == "IPv6" {
		tool = "ip6tables-save"
	}
	return family + " iptables rules (collect them with " + tool + ")"
}

// Load parses the node's iptables dumps of one family, keyed by backend:
// several headerless dumps of one backend (one per table) are merged, and
// the plane walks the backend that holds kube-proxy's chains.
func (Loader) Load(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	return load(ns, family, func(d *snapshot.Dump, source string, opts ParseOptions) (*Ruleset, error) {
		return parseParallel(source, d.Text, opts, parallelMin)
	})
}

var _ dataplane.NarrowLoader = Loader{}

// LoadNarrow is Load for a narrowed analysis: each chain's rules are parsed
// when first used (see parseLazy), and the plane's Err tells an error found
// then.
func (Loader) LoadNarrow(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	return load(ns, family, readNarrow)
}

// readNarrow reads a dump lazily, with its digest when it has one that
// this svctrace reads. A damaged digest, or one of another dump, is set
// aside with a note: the dump is then scanned as if it had none.
func readNarrow(d *snapshot.Dump, source string, opts ParseOptions) (*Ruleset, error) {
	if len(d.Index) == 0 {
		return parseLazy(source, d.Text, opts)
	}
	rs, err := parseDigested(source, d.Text, opts, d.Index)
	if err == nil {
		return rs, nil
	}
	rs, lerr := parseLazy(source, d.Text, opts)
	if lerr != nil || errors.Is(err, errDigestVersion) {
		return rs, lerr
	}
	rs.Notes = append(rs.Notes, Note{Message: fmt.Sprintf("the dump's index was not used (%v): the dump was read in full", err)})
	return rs, nil
}

var _ dataplane.DumpIndexer = Loader{}

// IndexDump digests an iptables-save dump of the node (see digest.go), so
// that a narrowed read of it (LoadNarrow) needs to read only the chains it
// walks. It returns nil for a dump it does not digest: another
// collector's, or one read in full (headerless, of no stated family).
func (Loader) IndexDump(ns *snapshot.NodeState, d *snapshot.Dump) ([]byte, error) {
	fam, ok := dumpFamily(d)
	if !ok {
		return nil, nil
	}
	rs, err := parseLazy(dataplane.Origin(ns.Name, d), d.Text, ParseOptions{Table: d.Table, Family: fam, Excerpt: d.Excerpt})
	if err != nil {
		return nil, dumpError(ns.Name, d, err)
	}
	for _, st := range rs.lazy {
		st.node, st.dump = ns.Name, d
	}
	return digest(rs)
}

// dumpFamily is the IP family of an iptables dump; false for a dump of
// another collector.
func dumpFamily(d *snapshot.Dump) (string, bool) {
	if d.Collector != CollectorSave && d.Collector != CollectorSave6 {
		return "", false
	}
	if d.Family != "" {
		return d.Family, true
	}
	if d.Collector == CollectorSave6 {
		return "IPv6", true
	}
	return "IPv4", true
}

func load(ns *snapshot.NodeState, family string, parse func(d *snapshot.Dump, source string, opts ParseOptions) (*Ruleset, error)) (dataplane.Plane, error) {
	byBackend := map[string]*Ruleset{}
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		fam, ok := dumpFamily(d)
		if !ok || fam != family {
			continue
		}
		rs, err := parse(d, dataplane.Origin(ns.Name, d), ParseOptions{Table: d.Table, Family: fam, Excerpt: d.Excerpt})
		if err != nil {
			return nil, dumpError(ns.Name, d, err)
		}
		for _, st := range rs.lazy {
			st.node, st.dump = ns.Name, d
		}
		backend := d.Backend
		if backend == "" {
			backend = rs.Backend
		}
		if backend == "" {
			backend = "unknown"
		}
		if prev, ok := byBackend[backend]; ok {
			mergeRulesets(prev, rs)
			continue
		}
		byBackend[backend] = rs
	}
	rs := pickRuleset(byBackend)
	if rs == nil {
		return nil, nil
	}
	return &Plane{Rules: rs, Backends: byBackend}, nil
}

// dumpError names the node and dump of a parse error, and its position.
func dumpError(node string, d *snapshot.Dump, err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return dataplane.NewDumpError(node, d, pe.Line, pe.Column, pe.Msg, err)
	}
	return dataplane.NewDumpError(node, d, 0, 0, "", err)
}

// mergeRulesets adds the tables of b to a (several headerless dumps of one
// node, one per table).
func mergeRulesets(a, b *Ruleset) {
	for _, name := range b.TableOrder {
		if _, ok := a.Tables[name]; !ok {
			a.Tables[name] = b.Tables[name]
			a.TableOrder = append(a.TableOrder, name)
		}
	}
	a.Notes = append(a.Notes, b.Notes...)
	a.lazy = append(a.lazy, b.lazy...)
	a.rest = append(a.rest, b.rest...)
	// A digest's facts are of its one dump.
	a.facts = nil
}

// pickRuleset chooses the backend holding kube-proxy's chains.
func pickRuleset(m map[string]*Ruleset) *Ruleset {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var best *Ruleset
	for _, k := range keys {
		rs := m[k]
		if best == nil || HasKubeChains(rs) && !HasKubeChains(best) {
			best = rs
		}
	}
	return best
}

// Leftovers reports kube-proxy's chains in every backend while kube-proxy
// runs in another mode.
func (p *Plane) Leftovers(node, activeMode string) []behavior.Finding {
	return p.modeLeftovers(node, activeMode).findings
}

// InertLeftovers names kube-proxy's chains of iptables mode that no packet
// enters, left while kube-proxy runs in another mode: they act on nothing.
func (p *Plane) InertLeftovers(node, activeMode string) []string {
	return p.modeLeftovers(node, activeMode).inert
}

// modeLeftovers is ModeLeftovers over every backend, worked out once for a
// node and mode.
func (p *Plane) modeLeftovers(node, activeMode string) leftovers {
	if activeMode == p.Mode() {
		return leftovers{}
	}
	p.leftMu.Lock()
	defer p.leftMu.Unlock()
	key := [2]string{node, activeMode}
	if l, ok := p.left[key]; ok {
		return l
	}
	var l leftovers
	for _, backend := range []string{"nf_tables", "legacy", "unknown"} {
		if rs := p.Backends[backend]; rs != nil {
			fs, inert := ModeLeftovers(rs, node, backend, activeMode)
			l.findings = append(l.findings, fs...)
			l.inert = append(l.inert, inert...)
		}
	}
	if p.left == nil {
		p.left = map[[2]string]leftovers{}
	}
	p.left[key] = l
	return l
}

// Conflicts reports kube-proxy's chains in both the legacy and the
// nf_tables backend: two proxies, or a switch of backends that left one.
func (p *Plane) Conflicts(node string) []behavior.Finding {
	legacy, nft := p.Backends["legacy"], p.Backends["nf_tables"]
	if legacy == nil || nft == nil {
		return nil
	}
	return SplitBrain(node, legacy, nft)
}

// Dumps implements dataplane.Declarer: iptables-save of each family, read
// on a node from each backend's own tool (the plain iptables-save is
// whichever the alternatives system points at).
func (Loader) Dumps() []dataplane.DumpKind {
	kind := func(collector, family, tool, flag, help string) dataplane.DumpKind {
		return dataplane.DumpKind{Collector: collector, Family: family, Flag: flag, Help: help, Backends: true,
			Tools: []dataplane.DumpTool{
				{Backend: "nf_tables", What: "the " + family + " nf_tables backend", Argv: []string{tool + "-nft-save"}},
				{Backend: "legacy", What: "the " + family + " legacy backend", Argv: []string{tool + "-legacy-save"}},
			}}
	}
	return []dataplane.DumpKind{
		kind(CollectorSave, "IPv4", "iptables", "iptables-save", "Import: iptables-save output (or iptables -S lines) of the node"),
		kind(CollectorSave6, "IPv6", "ip6tables", "ip6tables-save", "Import: ip6tables-save output of the node"),
	}
}

// PayloadForm implements dataplane.PayloadNamer.
func (Loader) PayloadForm() string { return "iptables-restore --noflush input" }
