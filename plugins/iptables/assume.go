package iptables

import (
	"fmt"
	"strings"
)

// An excerpt of a dump (grep of one Service, a few chains pasted in a
// ticket) often jumps to kube-proxy's fixed chains without holding them.
// Those chains have meant the same in every release kube-proxy's iptables
// and ipvs modes have had, so the walk assumes them where the excerpt
// lacks them, and says so, instead of ending the branch there. Only an
// excerpt can lack them: the kernel refuses a jump to a chain it does not
// hold, so a whole dump never reaches this.

// assumedChains are kube-proxy's fixed nat chains, as kube-proxy has
// always written them (the masquerade mark is its bit, 14 unless the
// rules or the settings say otherwise): KUBE-MARK-MASQ marks a packet for
// masquerading, KUBE-POSTROUTING masquerades what is marked, and
// KUBE-MARK-DROP marks a packet that KUBE-FIREWALL then drops (releases
// before 1.28 used it for source ranges and unreachable frontends).
func assumedChains(masqBit int32) (*Ruleset, error) {
	if masqBit <= 0 || masqBit > 31 {
		masqBit = 14
	}
	mark := fmt.Sprintf("%#x", uint32(1)<<uint(masqBit))
	text := strings.Join([]string{
		"*nat",
		":KUBE-MARK-MASQ - [0:0]",
		":KUBE-MARK-DROP - [0:0]",
		":KUBE-POSTROUTING - [0:0]",
		"-A KUBE-MARK-MASQ -j MARK --or-mark " + mark,
		`-A KUBE-MARK-DROP -m comment --comment "marked for kube-proxy's KUBE-FIREWALL, which drops it" -j DROP`,
		"-A KUBE-POSTROUTING -m mark ! --mark " + mark + "/" + mark + " -j RETURN",
		"-A KUBE-POSTROUTING -j MARK --xor-mark " + mark,
		"-A KUBE-POSTROUTING -j MASQUERADE",
		"COMMIT",
		"",
	}, "\n")
	rs, err := ParseString("kube-proxy's fixed chains (assumed)", text, ParseOptions{Family: "IPv4"})
	if err != nil {
		return nil, err
	}
	for _, c := range rs.Tables["nat"].chains() {
		for _, r := range c.Rules() {
			r.Raw = "(assumed) " + r.Raw
		}
	}
	return rs, nil
}

// assumed is kube-proxy's fixed chain name of table, where the dump lacks
// it, as assumedChains has it (nil: not one of them, or the dump holds it).
func (w *Walker) assumed(table, name string) *Chain {
	if w.fixed == nil || table != "nat" || w.rs.Chain(table, name) != nil {
		return nil
	}
	return w.fixed.Chain(table, name)
}

// assumedNote says that a chain was assumed, and as what.
func assumedNote(c *Chain) string {
	rules := make([]string, 0, len(c.rules))
	for _, r := range c.Rules() {
		rules = append(rules, r.Raw)
	}
	return fmt.Sprintf("nat chain %s is not in the dump: assumed as kube-proxy writes it (%s)", c.Name, strings.Join(rules, "; "))
}
