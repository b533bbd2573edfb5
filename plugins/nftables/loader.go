package nftables

import (
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// Loader reads a node's nftables ruleset (nft -j list ruleset) as the
// nftables plane of one family.
type Loader struct{}

var _ dataplane.Loader = Loader{}

// Mode is "nftables".
func (Loader) Mode() string { return "nftables" }

// Wants names the dump the plane reads.
func (Loader) Wants(family string) string {
	return "nftables ruleset with " + family + " tables (collect it with nft -j list ruleset)"
}

// Load parses the node's nftables dumps. A ruleset with tables, none of
// this family, says nothing of it; an empty one says the node has no rules
// at all.
func (Loader) Load(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	var p dataplane.Plane
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Collector != CollectorJSON {
			continue
		}
		rs, err := parsed(ns, d)
		if err != nil {
			return nil, dataplane.NewDumpError(ns.Name, d, 0, 0, "", err)
		}
		if len(rs.Tables) == 0 || hasFamilyTables(rs, family) {
			p = NewPlane(rs, family)
		}
	}
	return withIptablesNFT(p, ns, family), nil
}

// withIptablesNFT tells the plane p (when there is one) whether the node's
// state holds a dump of family read from iptables' nf_tables backend (the
// iptables plane's; only its dumps name a backend).
func withIptablesNFT(p dataplane.Plane, ns *snapshot.NodeState, family string) dataplane.Plane {
	pl, ok := p.(*Plane)
	if !ok {
		return p
	}
	for _, d := range ns.Dumps {
		if d.Family == family && d.Backend == "nf_tables" {
			pl.iptablesNFT = true
		}
	}
	return pl
}

// parsed is the dump's ruleset: the one ReadNetlink made, when the dump
// came from it in this process, or its text parsed.
func parsed(ns *snapshot.NodeState, d *snapshot.Dump) (*Ruleset, error) {
	if rs, ok := d.Parsed.(*Ruleset); ok {
		return rs, nil
	}
	return Parse(dataplane.Origin(ns.Name, d), []byte(d.Text))
}

// hasFamilyTables reports whether an nftables ruleset has tables that see
// packets of family (ip or ip6, and inet).
func hasFamilyTables(rs *Ruleset, family string) bool {
	fam := "ip"
	if family == "IPv6" {
		fam = "ip6"
	}
	for _, t := range rs.Tables {
		if t.Family == fam || t.Family == "inet" {
			return true
		}
	}
	return false
}

// Leftovers reports kube-proxy's table while kube-proxy runs in another
// mode: its chains still act on packets.
func (p *Plane) Leftovers(node, activeMode string) []behavior.Finding {
	if activeMode == p.Mode() || !p.HasKubeProxy() {
		return nil
	}
	return []behavior.Finding{{
		Type: behavior.LeftoverRules, Node: node,
		Expected: "no kube-proxy table in nftables",
		Observed: "nftables table kube-proxy",
		Message:  "kube-proxy runs in " + activeMode + " mode, but the nftables table kube-proxy of nftables mode is still there: a leftover, whose chains still act on packets",
	}}
}

// Conflicts: an nftables state has none of its own.
func (p *Plane) Conflicts(string) []behavior.Finding { return nil }

// Dumps implements dataplane.Declarer: the whole ruleset, every table of
// every family, as nft -j prints it (its text form imports too).
func (Loader) Dumps() []dataplane.DumpKind {
	return []dataplane.DumpKind{{
		Collector: CollectorJSON, Flag: "nft-json",
		Help:  "Import: the node's nftables ruleset: nft -j list ruleset (JSON) or nft list ruleset (text), either form",
		Tools: []dataplane.DumpTool{{What: "the nftables ruleset", Argv: []string{"nft", "-j", "list", "ruleset"}}},
	}}
}

// PayloadForm implements dataplane.PayloadNamer.
func (Loader) PayloadForm() string { return "nft -f input" }
