package iptables

import (
	"fmt"
	"strings"
)

// kube-proxy (1.24 on) ends each KUBE-EXT-<hash> chain with a jump that
// carries no comment: to KUBE-SVC-<hash> under a Cluster traffic policy,
// to KUBE-SVL-<hash> under a Local one. `iptables-save | grep SERVICE`
// keeps the chain's commented rules and drops that jump, so an external
// client's packet would fall off the chain. In an excerpt, the walk
// assumes the jump where the chain's commented rules tell the policy and
// the excerpt holds the chain it goes to.

// Releases that wrote KUBE-XLB-<hash> chains (a Local policy's external
// traffic, up to 1.23) began each with a rule whose comment names no
// Service, written whenever kube-proxy knows the cluster CIDR: pods, by
// that CIDR, go to KUBE-SVC-<hash>. A grep leaves it out too, and the walk
// assumes it where the excerpt tells the cluster CIDR.

// assumedChain is a chain of an excerpt with what it lacks assumed, and
// the note that says what.
type assumedChain struct {
	chain *Chain
	note  string
}

// extTails are an excerpt's KUBE-EXT chains with their last jump assumed,
// its KUBE-XLB chains with their first, and the filter table's
// KUBE-EXTERNAL-SERVICES with the drops of Services the excerpt proves
// have no local endpoint, by table and name (nil for a whole dump, or
// where nothing is assumed).
func extTails(rs *Ruleset) map[string]assumedChain {
	nat := rs.Tables["nat"]
	if rs.Excerpt == "" || nat == nil {
		return nil
	}
	var out map[string]assumedChain
	add := func(c *Chain, rules []*Rule) {
		if out == nil {
			out = map[string]assumedChain{}
		}
		ch := &Chain{Name: c.Name, Policy: c.Policy, Line: c.Line, rules: rules}
		out["nat/"+c.Name] = assumedChain{ch, tailNote(ch)}
	}
	var drops []string
	var cidrs []string
	for _, c := range nat.chains() {
		if hash, ok := strings.CutPrefix(c.Name, "KUBE-XLB-"); ok {
			if cidrs == nil {
				cidrs = append(Infer(rs).ClusterCIDRs, "")
			}
			if head := xlbHead(c, hash, nat, cidrs[0]); head != "" {
				if rule, err := assumedRuleText(rs.Family, c.Name, PrefixSVC+hash, head); err == nil {
					add(c, append([]*Rule{rule}, c.Rules()...))
				}
			}
			continue
		}
		hash, ok := strings.CutPrefix(c.Name, PrefixEXT)
		if !ok {
			continue
		}
		tail := extTail(c, hash, nat)
		if tail == "" {
			drops = append(drops, noLocalDrops(rs, nat, c, hash)...)
			continue
		}
		rule, err := assumedRuleText(rs.Family, c.Name, tail, "-A "+c.Name+" -j "+tail)
		if err != nil {
			continue
		}
		add(c, append(append([]*Rule(nil), c.Rules()...), rule))
	}
	if c, note := enteringRules(rs, unenteredClusterIPs(rs)); c != nil {
		if out == nil {
			out = map[string]assumedChain{}
		}
		out["nat/KUBE-SERVICES"] = assumedChain{c, note}
	}
	if len(drops) > 0 && rs.Chain("filter", "KUBE-EXTERNAL-SERVICES") == nil {
		if ch := assumedDrops(rs.Family, drops); ch != nil {
			if out == nil {
				out = map[string]assumedChain{}
			}
			out["filter/KUBE-EXTERNAL-SERVICES"] = assumedChain{ch, "filter chain KUBE-EXTERNAL-SERVICES is not in the excerpt, which shows " +
				"a Local traffic policy's KUBE-EXT chain whole and without its jump to the Service's local endpoints (it is no grep of the Service, " +
				"which would leave that uncommented jump out): the node has no local endpoint for it, and kube-proxy's drop is assumed: " + strings.Join(drops, "; ")}
		}
	}
	return out
}

// assumedDrops is filter's KUBE-EXTERNAL-SERVICES holding the rules
// drops, marked assumed (nil if they do not parse, which cannot be: they
// are this package's own).
func assumedDrops(family string, drops []string) *Chain {
	text := "*filter\n:KUBE-EXTERNAL-SERVICES - [0:0]\n" + strings.Join(drops, "\n") + "\nCOMMIT\n"
	rs, err := ParseString("assumed", text, ParseOptions{Family: family})
	if err != nil {
		return nil
	}
	c := rs.Chain("filter", "KUBE-EXTERNAL-SERVICES")
	for _, r := range c.Rules() {
		r.Raw = "(assumed) " + r.Raw
	}
	return c
}

// xlbHead is the rule a KUBE-XLB chain c of hash begins with, sending
// pods of the cluster CIDR to KUBE-SVC-<hash> ("": not known, already
// there, or that chain not in the excerpt).
func xlbHead(c *Chain, hash string, nat *Table, cidr string) string {
	if cidr == "" || nat.Chain(PrefixSVC+hash) == nil {
		return ""
	}
	for _, r := range c.Rules() {
		if r.Target == PrefixSVC+hash && r.Source != nil && !r.Source.Negate {
			return ""
		}
	}
	return "-A " + c.Name + " -s " + cidr + ` -m comment --comment "Redirect pods trying to reach external loadbalancer VIP to clusterIP" -j ` + PrefixSVC + hash
}

// extTail is the chain the KUBE-EXT chain c of hash ends by jumping to,
// as its commented rules tell the policy ("": not known, already there,
// or not in the excerpt).
func extTail(c *Chain, hash string, nat *Table) string {
	local, cluster := false, false
	for _, r := range c.Rules() {
		if r.Target == PrefixSVL+hash || (r.Target == PrefixSVC+hash && !strings.Contains(r.Comment(), "traffic for")) {
			return "" // the jump is there
		}
		comment := r.Comment()
		switch {
		case strings.HasPrefix(comment, "pod traffic for "), strings.HasPrefix(comment, "route LOCAL traffic for "):
			local = true
		case strings.HasPrefix(comment, "masquerade traffic for "):
			cluster = true
		}
	}
	switch {
	case local && !cluster && nat.Chain(PrefixSVL+hash) != nil:
		return PrefixSVL + hash
	case cluster && !local && nat.Chain(PrefixSVC+hash) != nil:
		return PrefixSVC + hash
	}
	return ""
}

// assumedRuleText is the rule line of chain, which jumps to target,
// marked assumed; its jump is looked up in the excerpt when it is walked.
func assumedRuleText(family, chain, target, line string) (*Rule, error) {
	text := "*nat\n:" + chain + " - [0:0]\n:" + target + " - [0:0]\n" + line + "\nCOMMIT\n"
	rs, err := ParseString("assumed", text, ParseOptions{Family: family})
	if err != nil {
		return nil, err
	}
	r := rs.Chain("nat", chain).Rules()[0]
	r.Raw = "(assumed) " + r.Raw
	r.jump = nil
	return r, nil
}

// tailNote says what was assumed of a chain of extTails.
func tailNote(c *Chain) string {
	r := c.rules[len(c.rules)-1]
	if !strings.HasPrefix(r.Raw, "(assumed) ") {
		r = c.rules[0]
	}
	return fmt.Sprintf("nat chain %s lacks, in the excerpt, a rule kube-proxy writes without naming the Service (so a grep leaves it out): assumed %s", c.Name, strings.TrimPrefix(r.Raw, "(assumed) "))
}
