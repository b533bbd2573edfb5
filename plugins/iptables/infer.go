package iptables

import (
	"fmt"
	"strings"
)

// Inferred is what the rules tell of kube-proxy's settings.
type Inferred struct {
	Mode          string
	ClusterCIDRs  []string
	MasqueradeBit int32
	// Evidence says, per setting, which rule it came from.
	Evidence []string
}

// Infer reads kube-proxy's settings off its rules: the local-traffic
// detector's CIDR from the ClusterIP masquerade rule ("! -s CIDR -j
// KUBE-MARK-MASQ") or the ETP Local "pod traffic" rule, and the masquerade
// bit from KUBE-MARK-MASQ.
func Infer(rs *Ruleset) Inferred {
	var in Inferred
	nat, ok := rs.Tables["nat"]
	if !ok {
		return in
	}
	if _, ok := nat.Chains["KUBE-SERVICES"]; ok {
		in.Mode = "iptables"
		in.Evidence = append(in.Evidence, "mode iptables: nat table has KUBE-SERVICES")
	}
	seen := map[string]bool{}
	for _, cname := range nat.ChainOrder {
		if !strings.HasPrefix(cname, PrefixSVC) && !strings.HasPrefix(cname, PrefixSVL) && !strings.HasPrefix(cname, PrefixEXT) {
			continue
		}
		for _, r := range nat.Chains[cname].Rules {
			if r.Source == nil || r.Source.Prefix.IsSingleIP() {
				continue
			}
			masqRule := r.Source.Negate && r.Target == "KUBE-MARK-MASQ"
			podRule := !r.Source.Negate && strings.HasPrefix(r.Comment(), "pod traffic for ")
			if !masqRule && !podRule {
				continue
			}
			cidr := r.Source.Prefix.String()
			if !seen[cidr] {
				seen[cidr] = true
				in.ClusterCIDRs = append(in.ClusterCIDRs, cidr)
				in.Evidence = append(in.Evidence, fmt.Sprintf("cluster CIDR %s: line %d (%s)", cidr, r.Line, cname))
			}
		}
	}
	if c, ok := nat.Chains["KUBE-MARK-MASQ"]; ok {
		for _, r := range c.Rules {
			if r.Target != "MARK" {
				continue
			}
			for _, o := range r.TargetOptions {
				if len(o.Args) == 0 {
					continue
				}
				v, _, ok := parseMark(o.Args[0])
				if !ok || v == 0 || v&(v-1) != 0 {
					continue
				}
				bit := int32(0)
				for v > 1 {
					v >>= 1
					bit++
				}
				in.MasqueradeBit = bit
				in.Evidence = append(in.Evidence, fmt.Sprintf("masquerade bit %d: line %d (KUBE-MARK-MASQ)", bit, r.Line))
			}
		}
	}
	return in
}
