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
	// LocalIface is the input interface of a local-traffic detector that
	// goes by interface, as the rules name it ("cni0", "veth+").
	LocalIface string
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
	switch mode, why := modeEvidence(rs); {
	case mode == "iptables":
		in.Mode = mode
		in.Evidence = append(in.Evidence, "mode iptables: "+why)
	case mode == "userspace":
		// The userspace proxier's state is these rules and its process.
		in.Mode = mode
		in.Evidence = append(in.Evidence, "mode userspace: "+why+" (the userspace proxier's portals: it proxies in its own process, which no dump shows)")
	case mode != "":
		// ipvs mode's iptables rules: the virtual servers are not in
		// this plane, so it says so and leaves the mode open.
		in.Evidence = append(in.Evidence, "mode "+mode+"? "+why+", but the input holds only its iptables rules (its virtual servers: ipvsadm -Ln)")
	case nat.Chain("KUBE-SERVICES") != nil:
		in.Mode = "iptables"
		in.Evidence = append(in.Evidence, "mode iptables: a guess: nat has KUBE-SERVICES, but no chain that tells the mode")
	}
	seen := map[string]bool{}
	// Only a rule with a source address can tell, and one whose address
	// reads as that of a rule already counted adds nothing: in a ruleset
	// read lazily, only the other lines are parsed.
	counted := map[string]bool{}
	candidate := func(line string) bool {
		if in.LocalIface == "" && strings.Contains(line, "-i ") {
			return true
		}
		addr, found, certain := sourceText(line)
		return !certain || found && !counted[addr]
	}
	var rp reparser
	defer rp.flush()
	for _, c := range nat.chains() {
		cname := c.Name
		// Releases before 1.24 put the ClusterIP masquerade rule in
		// KUBE-SERVICES itself.
		if !strings.HasPrefix(cname, PrefixSVC) && !strings.HasPrefix(cname, PrefixSVL) && !strings.HasPrefix(cname, PrefixEXT) && cname != "KUBE-SERVICES" {
			continue
		}
		for _, r := range c.rulesMentioning(&rp, candidate) {
			if i := r.InIface; i != nil && in.LocalIface == "" && r.Source == nil &&
				(i.Negate && r.Target == "KUBE-MARK-MASQ" || !i.Negate && strings.HasPrefix(r.Comment(), "pod traffic for ")) {
				in.LocalIface = i.Name
				in.Evidence = append(in.Evidence, fmt.Sprintf("local traffic by input interface %s: line %d (%s)", i.Name, r.Line, cname))
			}
			if r.Source == nil || r.Source.Redacted != "" || r.Source.Prefix.IsSingleIP() {
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
			if addr, found, certain := sourceText(r.Raw); found && certain {
				counted[addr] = true
			}
		}
	}
	if c := nat.Chain("KUBE-MARK-MASQ"); c != nil {
		for _, r := range c.Rules() {
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

// sourceText reads the source address of a rule line as written (after
// -s, --source or --src), when that is certain: found is false for a line
// with none, and certain false for a line that must be parsed to tell (two
// of them, one after a quote, an unusual spelling).
func sourceText(line string) (addr string, found, certain bool) {
	for i := 0; i < len(line); {
		j := strings.IndexByte(line[i:], '-')
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if j == 0 || line[j-1] != ' ' {
			continue
		}
		rest := line[j:]
		var opt string
		for _, o := range []string{"-s", "--source", "--src"} {
			if strings.HasPrefix(rest, o) {
				opt = o
			}
		}
		if opt == "" {
			continue
		}
		if len(rest) == len(opt) || rest[len(opt)] != ' ' {
			if opt == "-s" || len(rest) > len(opt) && rest[len(opt)] == '=' {
				return "", false, false // -sADDR, --source=ADDR, a bare -s
			}
			continue // --src-type, --source-ports and the like
		}
		if found || strings.IndexByte(line[:j], '"') >= 0 {
			return "", true, false // two, or one after a quote: in a comment?
		}
		a, _, _ := strings.Cut(rest[len(opt)+1:], " ")
		if a == "" || strings.ContainsAny(a, "\"'\\\t") {
			return "", true, false
		}
		addr, found = a, true
	}
	return addr, found, true
}
