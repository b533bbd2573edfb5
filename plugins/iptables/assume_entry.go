package iptables

import (
	"fmt"
	"strings"
)

// An excerpt may hold a Service's chain without the KUBE-SERVICES rule
// that sends its ClusterIP there (a few chains listed by hand, a listing
// cut above them). From 1.24 on, kube-proxy begins that chain with the
// ClusterIP's masquerade rule, which names the address, protocol and port
// ("! -s <cluster CIDR> -d <ClusterIP> ... --dport <port> -j
// KUBE-MARK-MASQ", commented "<svc> cluster IP"): the frontend is read
// off it, and the jump to the chain assumed.

// entryRule is an excerpt's Service chain that no rule enters, with the
// ClusterIP its first rule names.
type entryRule struct {
	chain, ip, proto, spn string
	port                  int32
}

// unenteredClusterIPs are the excerpt's KUBE-SVC chains that no rule
// jumps to and whose ClusterIP masquerade rule names their frontend.
func unenteredClusterIPs(rs *Ruleset) []entryRule {
	nat := rs.Tables["nat"]
	if rs.Excerpt == "" || nat == nil {
		return nil
	}
	entered := map[string]bool{}
	var svcs []*Chain
	for _, c := range nat.chains() {
		for _, r := range c.Rules() {
			entered[r.Target] = true
		}
		if strings.HasPrefix(c.Name, PrefixSVC) || c.Name == headlessChain {
			// A listing's rows above its first Chain line may be a
			// Service chain's: its first rule says whether they are.
			svcs = append(svcs, c)
		}
	}
	var out []entryRule
	for _, c := range svcs {
		if entered[c.Name] {
			continue
		}
		for _, r := range c.Rules() {
			spn, ok := strings.CutSuffix(r.Comment(), " cluster IP")
			proto, port, okp := protoPort(r)
			if !ok || !okp || r.Target != "KUBE-MARK-MASQ" || r.Dest == nil || r.Dest.Negate || !r.Dest.Prefix.IsSingleIP() {
				continue
			}
			out = append(out, entryRule{chain: c.Name, ip: r.Dest.Prefix.Addr().String(), proto: strings.ToLower(proto), spn: spn, port: port})
			break
		}
	}
	return out
}

// enteringRules is nat's KUBE-SERVICES with the jumps to the chains of
// entries assumed after the excerpt's own rules (nil: none to assume).
func enteringRules(rs *Ruleset, entries []entryRule) (*Chain, string) {
	if len(entries) == 0 {
		return nil, ""
	}
	var lines []string
	for _, e := range entries {
		lines = append(lines, fmt.Sprintf(`-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment "%s cluster IP" -m %s --dport %d -j %s`,
			e.ip, e.proto, e.spn, e.proto, e.port, e.chain))
	}
	var rules []*Rule
	if own := rs.Chain("nat", "KUBE-SERVICES"); own != nil {
		rules = append(rules, own.Rules()...)
	}
	for i, l := range lines {
		r, err := assumedRuleText(rs.Family, "KUBE-SERVICES", entries[i].chain, l)
		if err != nil {
			continue
		}
		rules = append(rules, r)
	}
	// The jumps go before a KUBE-NODEPORTS jump, which kube-proxy keeps
	// last.
	for i, r := range rules {
		if r.Target == "KUBE-NODEPORTS" && i < len(rules)-1 {
			rules = append(append(rules[:i:i], rules[i+1:]...), r)
			break
		}
	}
	c := &Chain{Name: "KUBE-SERVICES", rules: rules}
	return c, "nat chain KUBE-SERVICES lacks, in the excerpt, the jumps to Service chains it holds; assumed from the ClusterIP each chain's first rule names: " +
		strings.Join(lines, "; ")
}
