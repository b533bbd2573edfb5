package analysis

import (
	"errors"
	"fmt"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/plugins/nftables"
	"github.com/svctrace/svctrace/snapshot"
)

// planes are the data planes a node's dumps hold for one IP family.
type planes struct {
	// byBackend are the iptables rulesets by backend (nf_tables, legacy).
	byBackend map[string]*iptables.Ruleset
	ipt       *iptables.Plane // nil without an iptables dump
	nft       *nftables.Plane // nil without an nftables dump of the family
	// family is the IP family the planes are of (IPv4, IPv6).
	family string
}

func loadPlanes(ns *snapshot.NodeState, family string) (*planes, error) {
	byBackend, err := parseDumps(ns, family)
	if err != nil {
		return nil, err
	}
	p := &planes{byBackend: byBackend, family: family}
	if rs := pickRuleset(byBackend); rs != nil {
		p.ipt = &iptables.Plane{Rules: rs}
	}
	for _, d := range ns.Dumps {
		if d.Collector != snapshot.CollectorNFTJSON {
			continue
		}
		origin := d.Origin
		if origin == "" {
			origin = fmt.Sprintf("node %s %s dump", ns.Name, d.Collector)
		}
		rs, err := nftables.Parse(origin, []byte(d.Text))
		if err != nil {
			return nil, dumpError(ns.Name, &d, err)
		}
		// A ruleset with tables, none of this family, says nothing of
		// it; an empty one says the node has no rules at all.
		if len(rs.Tables) == 0 || hasFamilyTables(rs, family) {
			p.nft = nftables.NewPlane(rs, family)
		}
	}
	return p, nil
}

// choose picks the plane kube-proxy programs: the configured mode, else
// the one holding kube-proxy's objects (nftables when both do, as
// kube-proxy in nftables mode is the newer and leaves iptables alone).
func (p *planes) choose(node, mode string) (dataplane.Plane, string, error) {
	switch mode {
	case "iptables":
		if p.ipt == nil {
			return nil, "", fmt.Errorf("node %s: kube-proxy runs in iptables mode, but the snapshot holds no %s iptables dump", node, p.family)
		}
		return p.ipt, "", nil
	case "nftables":
		if p.nft == nil {
			return nil, "", fmt.Errorf("node %s: kube-proxy runs in nftables mode, but the snapshot holds no nftables ruleset with %s tables (collect it with nft -j list ruleset)", node, p.family)
		}
		return p.nft, "", nil
	case "":
	default:
		return nil, "", fmt.Errorf("node %s: kube-proxy runs in %s mode, which this svctrace cannot read yet", node, mode)
	}
	nft := p.nft != nil && p.nft.HasKubeProxy()
	ipt := p.ipt != nil && p.ipt.HasKubeProxy()
	switch {
	case nft && ipt:
		return p.nft, "kube-proxy's objects are in both nftables and iptables: assumed nftables mode (the iptables chains are reported as leftovers); say the mode with --proxy-mode", nil
	case nft:
		return p.nft, "", nil
	case ipt:
		return p.ipt, "", nil
	case p.ipt == nil && p.nft == nil:
		return nil, "", fmt.Errorf("node %s: the snapshot holds no %s rules of this node (no iptables dump and no nftables table of that family)", node, p.family)
	}
	return nil, "", fmt.Errorf("node %s: neither iptables nor nftables holds kube-proxy's objects; if kube-proxy runs in ipvs mode, this svctrace cannot read it yet (to check an empty node, give its mode with --proxy-mode)", node)
}

// leftovers reports kube-proxy's objects in the planes it does not
// program: chains of iptables mode beside nftables mode, the kube-proxy
// table of nftables mode beside iptables mode.
func (p *planes) leftovers(active dataplane.Plane, node string) []behavior.Finding {
	var out []behavior.Finding
	switch active.Mode() {
	case "nftables":
		for _, backend := range []string{"nf_tables", "legacy", "unknown"} {
			if rs := p.byBackend[backend]; rs != nil {
				out = append(out, iptables.ModeLeftovers(rs, node, backend, "nftables")...)
			}
		}
	case "iptables":
		if p.nft != nil && p.nft.HasKubeProxy() {
			out = append(out, behavior.Finding{
				Type: behavior.LeftoverRules, Node: node,
				Expected: "no kube-proxy table in nftables",
				Observed: "nftables table kube-proxy",
				Message:  "kube-proxy runs in iptables mode, but the nftables table kube-proxy of nftables mode is still there: a leftover, whose chains still act on packets",
			})
		}
	}
	return out
}

// nodeDumpError is an error in one dump of a node's state.
type nodeDumpError struct {
	msg string
	err error
}

func (e *nodeDumpError) Error() string { return e.msg }
func (e *nodeDumpError) Unwrap() error { return e.err }

// dumpError names the node and the dump an error is in, with the line and
// column a parser gives: "node node1: iptables-save dump line 12 col 5: ..."
// (or FILE:12:5 for a dump imported from a file).
func dumpError(node string, d *snapshot.Dump, err error) error {
	var pe *iptables.ParseError
	if errors.As(err, &pe) {
		where := fmt.Sprintf("line %d col %d", pe.Line, pe.Column)
		if d.Origin != "" {
			where = fmt.Sprintf("%s:%d:%d", d.Origin, pe.Line, pe.Column)
		}
		return &nodeDumpError{msg: fmt.Sprintf("node %s: %s dump %s: %s", node, d.Collector, where, pe.Msg), err: err}
	}
	return &nodeDumpError{msg: fmt.Sprintf("node %s: %s dump: %v", node, d.Collector, err), err: err}
}

// hasFamilyTables reports whether an nftables ruleset has tables that see
// packets of family (ip or ip6, and inet).
func hasFamilyTables(rs *nftables.Ruleset, family string) bool {
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
