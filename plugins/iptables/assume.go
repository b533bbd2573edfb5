package iptables

import (
	"fmt"
	"strings"
)

// An excerpt of a dump (grep of one Service, a few chains pasted in a
// ticket) often jumps to kube-proxy's fixed chains without holding them,
// and lacks the built-in chains that jump into kube-proxy's. Those have
// meant the same in every release of kube-proxy's iptables mode, so the
// walk assumes them where the excerpt lacks them, and says so, instead of
// ending the branch there. Only an excerpt can lack them: the kernel
// refuses a jump to a chain it does not hold, and a whole dump has every
// built-in chain of its tables.

// assumedText is kube-proxy's fixed chains as it writes them, and its
// jumps from the built-in chains, in the order it inserts them ({MARK} is
// the masquerade mark, bit 14: an excerpt rarely tells another):
// KUBE-MARK-MASQ marks a packet for masquerading, KUBE-POSTROUTING
// masquerades what is marked, KUBE-MARK-DROP marks a packet that
// KUBE-FIREWALL then drops (releases before 1.28 used it for source
// ranges and unreachable frontends), and the last rule of KUBE-SERVICES
// sends what is addressed to the node to KUBE-NODEPORTS. The userspace
// proxier's chains are entered the same way.
const assumedText = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-MARK-DROP - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PORTALS-CONTAINER - [0:0]
:KUBE-NODEPORT-CONTAINER - [0:0]
:KUBE-PORTALS-HOST - [0:0]
:KUBE-NODEPORT-HOST - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A PREROUTING -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A PREROUTING -j KUBE-PORTALS-CONTAINER
-A PREROUTING -m addrtype --dst-type LOCAL -j KUBE-NODEPORT-CONTAINER
-A OUTPUT -j KUBE-SERVICES
-A OUTPUT -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A OUTPUT -j KUBE-PORTALS-HOST
-A OUTPUT -m addrtype --dst-type LOCAL -j KUBE-NODEPORT-HOST
-A POSTROUTING -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --or-mark {MARK}
-A KUBE-MARK-DROP -m comment --comment "marked for kube-proxy's KUBE-FIREWALL, which drops it" -j DROP
-A KUBE-POSTROUTING -m mark ! --mark {MARK}/{MARK} -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark {MARK}
-A KUBE-POSTROUTING -j MASQUERADE
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -j KUBE-PROXY-FIREWALL
-A INPUT -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -j KUBE-PROXY-FIREWALL
-A FORWARD -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES
-A OUTPUT -j KUBE-FIREWALL
COMMIT
`

// isFixedChain reports whether name is one of assumedText's chains that
// are kube-proxy's own.
func isFixedChain(name string) bool {
	return name == "KUBE-MARK-MASQ" || name == "KUBE-MARK-DROP" || name == "KUBE-POSTROUTING"
}

// assumedFor is what a walk of rs may assume (nil: nothing, rs lacks none
// of it). It is read once per walker, and only for a dump that lacks a
// fixed chain or a built-in chain of nat or filter.
func assumedFor(rs *Ruleset) *Ruleset {
	lacks := false
	for _, name := range []string{"KUBE-MARK-MASQ", "KUBE-MARK-DROP", "KUBE-POSTROUTING"} {
		lacks = lacks || rs.Chain("nat", name) == nil
	}
	for _, hook := range []string{"PREROUTING", "OUTPUT", "POSTROUTING"} {
		lacks = lacks || rs.Chain("nat", hook) == nil
	}
	for _, hook := range []string{"INPUT", "FORWARD", "OUTPUT"} {
		lacks = lacks || rs.Chain("filter", hook) == nil
	}
	if !lacks {
		return nil
	}
	fixed, err := parseAssumed(rs.Family)
	if err != nil {
		// assumedText is this package's own: TestAssumedText reads it.
		return nil
	}
	for _, t := range fixed.Tables {
		for _, c := range t.chains() {
			for _, r := range c.Rules() {
				r.Raw = "(assumed) " + r.Raw
				// The jump is to the excerpt's chain of that name, not
				// to assumedText's empty declaration.
				r.jump = nil
			}
		}
	}
	return fixed
}

// parseAssumed reads assumedText for a family.
func parseAssumed(family string) (*Ruleset, error) {
	return ParseString("kube-proxy's chains (assumed)", strings.ReplaceAll(assumedText, "{MARK}", "0x4000"), ParseOptions{Family: family})
}

// assumed is kube-proxy's fixed chain name of table, where the dump lacks
// it, as assumedText has it (nil: not one of them, or the dump holds it).
func (w *Walker) assumed(table, name string) *Chain {
	if w.fixed == nil || table != "nat" || !isFixedChain(name) || w.rs.Chain(table, name) != nil {
		return nil
	}
	return w.fixed.Chain(table, name)
}

// assumedNote says that a chain was assumed, and as what.
func assumedNote(c *Chain) string {
	rules := make([]string, 0, len(c.rules))
	for _, r := range c.Rules() {
		rules = append(rules, strings.TrimPrefix(r.Raw, "(assumed) "))
	}
	return fmt.Sprintf("nat chain %s is not in the dump: assumed as kube-proxy writes it (%s)", c.Name, strings.Join(rules, "; "))
}

// excerptEntry stands in for a built-in chain of nat or filter that an
// excerpt does not have: the walk enters the excerpt's kube-proxy chains
// as kube-proxy's jump rules would, and says so. The jump to
// KUBE-NODEPORTS, the last rule of KUBE-SERVICES, is assumed only where no
// rule of the excerpt jumps there, and KUBE-POSTROUTING only where a rule
// of it marks packets for it.
func (w *Walker) excerptEntry(s *state, table, hook string) *Chain {
	if w.fixed == nil {
		return nil
	}
	entry := w.fixed.Chain(table, hook)
	if entry == nil {
		return nil
	}
	c := &Chain{Name: hook, Builtin: true, Policy: "ACCEPT"}
	for _, r := range entry.Rules() {
		if _, tail := w.tails[table+"/"+r.Target]; !tail && w.rs.Chain(table, r.Target) == nil && w.assumed(table, r.Target) == nil {
			continue
		}
		if table == "nat" && r.Target == "KUBE-NODEPORTS" && w.jumpedTo(table, r.Target) {
			continue
		}
		if r.Target == "KUBE-POSTROUTING" && w.rs.Chain(table, r.Target) == nil && !w.jumpedTo(table, "KUBE-MARK-MASQ") {
			// Nothing of the excerpt marks a packet for it.
			continue
		}
		c.rules = append(c.rules, r)
	}
	if len(c.rules) == 0 {
		return nil
	}
	s.note("the dump has no %s %s chain: entered kube-proxy's chains as its jump rules would", table, hook)
	return c
}

// jumpedTo reports whether a rule of table jumps to chain name.
func (w *Walker) jumpedTo(table, name string) bool {
	t := w.rs.Tables[table]
	if t == nil {
		return false
	}
	for _, c := range t.chains() {
		for _, r := range c.Rules() {
			if r.Target == name {
				return true
			}
		}
	}
	return false
}
