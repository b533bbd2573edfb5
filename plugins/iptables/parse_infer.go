package iptables

import (
	"fmt"
	"slices"
	"strings"
)

// pendingLine is a headerless -A, -N or -P line waiting for its table.
type pendingLine struct {
	line   int
	chain  string
	policy string // -N: "-"; -P: the policy
	rule   *Rule  // nil for -N and -P
}

const (
	inferNat    = "nat"
	inferFilter = "filter"
	inferAmbig  = "ambiguous" // KUBE-SERVICES, KUBE-NODEPORTS: per rule
	inferWeak   = "weak"      // INPUT: filter only if nothing else says
)

// Kinds of evidence, in the order a note lists them.
const (
	inferWhyChain = iota
	inferWhyTarget
	inferWhyJump
	inferWhyRest
	inferWhyKinds
)

// tableVerdict is where one chain or rule goes, and why.
type tableVerdict struct {
	table string
	kind  int
	label string
}

// inferChainClass says which table a chain name belongs to: nat, filter,
// ambiguous (both), weak (INPUT) or "" (no idea); label names the
// pattern for notes.
func inferChainClass(name string) (class, label string) {
	for _, pre := range [...]string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-PORTALS-"} {
		if strings.HasPrefix(name, pre) {
			return inferNat, pre + "*"
		}
	}
	switch name {
	case "KUBE-MARK-MASQ", "KUBE-MARK-DROP", "KUBE-POSTROUTING", "KUBE-NODEPORT-CONTAINER",
		"KUBE-NODEPORT-HOST", "PREROUTING", "POSTROUTING":
		return inferNat, name
	case "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-EXTERNAL-SERVICES", "KUBE-FIREWALL", "FORWARD":
		return inferFilter, name
	case "KUBE-SERVICES", "KUBE-NODEPORTS":
		return inferAmbig, name
	case "INPUT":
		return inferWeak, name
	}
	return "", ""
}

// inferTargetVerdict is the evidence a rule's target gives; ambiguous is set
// for rules of KUBE-SERVICES / KUBE-NODEPORTS, where DROP, ACCEPT, MARK
// and a jump to KUBE-NODEPORTS also decide.
func inferTargetVerdict(target string, ambiguous bool) tableVerdict {
	switch target {
	case "DNAT", "SNAT", "MASQUERADE", "REDIRECT":
		return tableVerdict{inferNat, inferWhyTarget, target}
	case "REJECT":
		return tableVerdict{inferFilter, inferWhyTarget, target}
	case "DROP", "ACCEPT":
		if ambiguous {
			return tableVerdict{inferFilter, inferWhyTarget, target}
		}
	case "MARK":
		if ambiguous {
			return tableVerdict{inferNat, inferWhyTarget, target}
		}
	case "KUBE-NODEPORTS":
		if ambiguous {
			return tableVerdict{inferNat, inferWhyJump, target}
		}
	}
	if c, label := inferChainClass(target); c == inferNat || c == inferFilter {
		return tableVerdict{c, inferWhyJump, label}
	}
	return tableVerdict{}
}

// excerptReason says why headerless lines are an excerpt rather than
// iptables -S of whole tables, which declares each chain (-N, or -P for a
// built-in one) before its rules: a chain with rules and no declaration
// ("" when every chain has one).
func excerptReason(lines []pendingLine) string {
	declared := map[string]bool{}
	for _, it := range lines {
		if it.rule == nil {
			declared[it.chain] = true
		}
	}
	for _, it := range lines {
		if it.rule != nil && !declared[it.chain] {
			return fmt.Sprintf("rules of chain %s without its -N or -P line", it.chain)
		}
	}
	return ""
}

// placePending files the headerless lines: into opts.Table when given,
// else into the table inferred per chain (per rule for KUBE-SERVICES and
// KUBE-NODEPORTS), and notes what was inferred and why.
func (p *dumpParser) placePending() {
	if len(p.pending) == 0 {
		return
	}
	p.rs.Excerpt = excerptReason(p.pending)
	if p.opts.Table != "" {
		for i := range p.pending {
			p.place(p.opts.Table, &p.pending[i])
		}
		return
	}
	chains := make(map[string]*inferChain)
	order := inferChains(p.pending, chains)
	perRule := make([]tableVerdict, len(p.pending))
	nat, filter := inferRuleVerdicts(p.pending, chains, perRule)
	rest := tableVerdict{inferNat, inferWhyRest, ""}
	switch {
	case filter > nat:
		rest.table = inferFilter
	case nat == 0 && slices.ContainsFunc(order, func(c string) bool { return chains[c].class == inferWeak }):
		rest = tableVerdict{inferFilter, inferWhyChain, "INPUT"}
	}
	p.placeInferred(chains, perRule, rest, nat+filter > 0)
}

// inferChain is what the pending lines tell of the table of one chain.
type inferChain struct {
	v     tableVerdict
	class string
	votes map[tableVerdict]int
}

// inferChains infers, into chains, the table of each chain of the pending
// lines, from its name or else its rules' targets; order lists the chains
// as first met.
func inferChains(pending []pendingLine, chains map[string]*inferChain) (order []string) {
	for _, it := range pending {
		ci := chains[it.chain]
		if ci == nil {
			class, label := inferChainClass(it.chain)
			ci = &inferChain{class: class}
			if class == inferNat || class == inferFilter {
				ci.v = tableVerdict{class, inferWhyChain, label}
			}
			chains[it.chain] = ci
			order = append(order, it.chain)
		}
		if it.rule != nil && ci.v.table == "" && ci.class != inferAmbig {
			if v := inferTargetVerdict(it.rule.Target, false); v.table != "" {
				if ci.votes == nil {
					ci.votes = make(map[tableVerdict]int)
				}
				ci.votes[v]++
			}
		}
	}
	// A chain without a telling name goes where its rules' targets say.
	for _, name := range order {
		if ci := chains[name]; ci.v.table == "" && len(ci.votes) > 0 {
			ci.v = inferBestVote(ci.votes)
		}
	}
	return order
}

// inferRuleVerdicts sets perRule's verdicts for the rules of the
// ambiguous chains, and counts the file's votes.
func inferRuleVerdicts(pending []pendingLine, chains map[string]*inferChain, perRule []tableVerdict) (nat, filter int) {
	for i, it := range pending {
		ci := chains[it.chain]
		v := ci.v
		if ci.class == inferAmbig && it.rule != nil {
			v = inferTargetVerdict(it.rule.Target, true)
			perRule[i] = v
		}
		switch {
		case it.rule == nil:
		case v.table == inferNat:
			nat++
		case v.table == inferFilter:
			filter++
		}
	}
	return nat, filter
}

// placeInferred places each pending line in its inferred table (its
// rule's, else its chain's, else rest) and notes why, per table;
// evidence is whether any rule voted.
func (p *dumpParser) placeInferred(chains map[string]*inferChain, perRule []tableVerdict, rest tableVerdict, evidence bool) {
	notes := make(map[string]*[inferWhyKinds][]string)
	var noteOrder []string
	counts := make(map[string]int)
	for i := range p.pending {
		it := &p.pending[i]
		v := perRule[i]
		if v.table == "" {
			v = chains[it.chain].v
		}
		if v.table == "" {
			v = rest
			if v.kind == inferWhyRest {
				v.label = it.chain
			}
		}
		p.place(v.table, it)
		why := notes[v.table]
		if why == nil {
			why = new([inferWhyKinds][]string)
			notes[v.table] = why
			noteOrder = append(noteOrder, v.table)
		}
		if !slices.Contains(why[v.kind], v.label) {
			why[v.kind] = append(why[v.kind], v.label)
		}
		if it.rule != nil {
			counts[v.table]++
		}
	}
	for _, t := range noteOrder {
		p.note(0, "no table headers: rules placed in table %s, inferred from %s (%d rules)",
			t, inferReasons(notes[t], evidence), counts[t])
	}
}

func inferBestVote(votes map[tableVerdict]int) tableVerdict {
	var best tableVerdict
	n := -1
	for v, c := range votes {
		if c > n || (c == n && (v.table < best.table || v.table == best.table && v.label < best.label)) {
			best, n = v, c
		}
	}
	return best
}

// inferReasons formats the evidence for one table.
func inferReasons(why *[inferWhyKinds][]string, evidence bool) string {
	var parts []string
	for kind, labels := range why {
		if len(labels) == 0 {
			continue
		}
		list := strings.Join(labels, ", ")
		switch kind {
		case inferWhyChain:
			parts = append(parts, "chain names "+list)
		case inferWhyTarget:
			parts = append(parts, "targets "+list)
		case inferWhyJump:
			parts = append(parts, "jumps to "+list)
		case inferWhyRest:
			if evidence {
				parts = append(parts, fmt.Sprintf("the rest of the file (chains %s)", list))
			} else {
				parts = append(parts, fmt.Sprintf("nothing: chains %s give no hint, nat assumed", list))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// place files one pending line into table.
func (p *dumpParser) place(table string, it *pendingLine) {
	t := p.ensureTable(table, 0)
	if it.rule == nil {
		p.declare(t, it.chain, it.policy, it.line)
		return
	}
	c := p.chain(t, it.chain)
	it.rule.Table, it.rule.Chain = t.Name, c.Name
	p.appendRule(c, it.rule)
}
