package iptables

import (
	"fmt"
	"strings"
)

// A Service with a Local external traffic policy and no endpoint on the
// node: kube-proxy (1.24 on) writes its KUBE-EXT-<hash> chain without the
// final jump to KUBE-SVL-<hash>, and drops external packets to it in the
// filter table's KUBE-EXTERNAL-SERVICES ("<svc> has no local endpoints").
// An excerpt that shows the whole KUBE-EXT chain without that jump, and
// is no grep of the Service's name (which would leave the uncommented
// jump out), proves the node has no local endpoint; where it lacks the
// filter rule, the walk assumes it, and says so.

// noLocalDrops are the filter rules kube-proxy writes for the excerpt's
// KUBE-EXT chain c of hash, whose Service has no local endpoint, one per
// frontend that jumps to c ("" when the excerpt does not prove it).
func noLocalDrops(rs *Ruleset, nat *Table, c *Chain, hash string) []string {
	rules := c.Rules()
	if len(rules) == 0 || nat.Chain(PrefixSVL+hash) != nil {
		return nil
	}
	spn := ""
	for _, r := range rules {
		cm := r.Comment()
		if s, ok := strings.CutPrefix(cm, "pod traffic for "); ok {
			spn, _, _ = strings.Cut(s, " external destinations")
		}
		if r.Target == PrefixSVL+hash || strings.HasPrefix(cm, "masquerade traffic for ") {
			return nil // the jump is there, or a Cluster policy
		}
	}
	if spn == "" || !notGrepOf(rs, spn, rules[len(rules)-1].Line) {
		return nil
	}
	var out []string
	comment := fmt.Sprintf(`-m comment --comment "%s has no local endpoints"`, spn)
	for _, from := range []string{"KUBE-NODEPORTS", "KUBE-SERVICES"} {
		ch := nat.Chain(from)
		if ch == nil {
			continue
		}
		for _, r := range ch.Rules() {
			proto, port, ok := protoPort(r)
			if !ok || r.Target != c.Name {
				continue
			}
			p := strings.ToLower(proto)
			switch {
			case from == "KUBE-NODEPORTS":
				out = append(out, fmt.Sprintf("-A KUBE-EXTERNAL-SERVICES -p %s %s -m addrtype --dst-type LOCAL -m %s --dport %d -j DROP", p, comment, p, port))
			case r.Dest != nil:
				out = append(out, fmt.Sprintf("-A KUBE-EXTERNAL-SERVICES -d %s -p %s %s -m %s --dport %d -j DROP", r.Dest.Prefix, p, comment, p, port))
			}
		}
	}
	return out
}

// notGrepOf reports whether the excerpt is no grep of spn's name: it
// holds a rule that does not name it, and a rule after line last (so the
// chain ending there is not cut at the excerpt's end).
func notGrepOf(rs *Ruleset, spn string, last int) bool {
	other, after := false, false
	for _, t := range rs.Tables {
		for _, c := range t.chains() {
			for _, r := range c.Rules() {
				other = other || !strings.Contains(r.Raw, spn)
				after = after || r.Line > last
			}
		}
	}
	return other && after
}
