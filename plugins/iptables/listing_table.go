package iptables

import (
	"fmt"
	"slices"
	"strings"
)

// guessTable names the table a listing is of, once from all its chains
// and targets, and says why.
func (l *listing) guessTable() (table, why string) {
	have := map[string]bool{}
	var builtins []string
	for _, c := range l.chains {
		have[c.name] = true
		if isBuiltinChain(c.name) {
			builtins = append(builtins, c.name)
		}
	}
	list := strings.Join(builtins, ", ")
	switch {
	case len(builtins) == 5:
		return "mangle", "it lists all five built-in chains, as only mangle has"
	case have["PREROUTING"] && !have["INPUT"] && !have["POSTROUTING"] && !have["FORWARD"]:
		return "raw", "its built-in chains are " + list + ", as raw's are"
	case (have["PREROUTING"] || have["POSTROUTING"]) && !have["FORWARD"]:
		return "nat", "its built-in chains are " + list + ", and only nat has PREROUTING and POSTROUTING without FORWARD"
	case have["FORWARD"] && !have["PREROUTING"] && !have["POSTROUTING"]:
		return "filter", "its built-in chains are " + list + ", as filter's are"
	}
	nat, filter := l.tableEvidence()
	switch {
	case len(nat) > 0 && len(nat) >= len(filter):
		return "nat", "its chains and targets point to it: " + strings.Join(nat, ", ")
	case len(filter) > 0:
		return "filter", "its chains and targets point to it: " + strings.Join(filter, ", ")
	}
	return "nat", "nothing in it tells; kube-proxy's Service rules are in nat"
}

// tableEvidence lists what in the listing's chains and targets points to
// the nat table and to the filter table, each kind once.
func (l *listing) tableEvidence() (nat, filter []string) {
	add := func(list []string, s string) []string {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
		return list
	}
	names := make([]string, 0, len(l.chains)+len(l.targets))
	for _, c := range l.chains {
		names = append(names, c.name)
	}
	for t := range l.targets {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, name := range names {
		switch t := listingTableOf(name); t {
		case "nat":
			nat = add(nat, listingLabel(name))
		case "filter":
			filter = add(filter, listingLabel(name))
		}
	}
	return nat, filter
}

// listingTableOf is the table a chain or target name belongs to ("" when
// it could be in either, or is not known).
func listingTableOf(name string) string {
	for _, pre := range []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-XLB-", "KUBE-PORTALS-", "felix-FIP-", "CNI-", "FLANNEL-POSTRTG"} {
		if strings.HasPrefix(name, pre) {
			return "nat"
		}
	}
	for _, pre := range []string{"DOCKER-ISOLATION", "DOCKER-USER", "ufw-", "FLANNEL-FWD"} {
		if strings.HasPrefix(name, pre) {
			return "filter"
		}
	}
	switch name {
	case "DNAT", "SNAT", "MASQUERADE", "REDIRECT", "KUBE-MARK-MASQ", "KUBE-MARK-DROP", "KUBE-POSTROUTING",
		"KUBE-NODEPORT-CONTAINER", "KUBE-NODEPORT-HOST":
		return "nat"
	case "REJECT", "KUBE-FORWARD", "KUBE-FIREWALL", "KUBE-PROXY-FIREWALL", "KUBE-EXTERNAL-SERVICES":
		return "filter"
	}
	return ""
}

// listingLabel names a chain or target for the table note: a pattern for
// per-Service chains.
func listingLabel(name string) string {
	for _, pre := range []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-XLB-", "CNI-", "ufw-", "DOCKER-ISOLATION"} {
		if strings.HasPrefix(name, pre) {
			return pre + "*"
		}
	}
	switch name {
	case "DNAT", "SNAT", "MASQUERADE", "REDIRECT", "REJECT":
		return fmt.Sprintf("%s targets", name)
	}
	return name
}

// headlessName names the chain of the rules before a listing's first
// Chain line: KUBE-SERVICES when one of them is a rule only kube-proxy's
// KUBE-SERVICES holds and no Chain line of the listing names it, else
// headlessChain; why says which rule told.
func headlessName(text string) (name, why string) {
	n := 0
	for line := range strings.Lines(text) {
		n++
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "Chain ") {
			break
		}
		switch {
		case strings.Contains(t, "/* kubernetes service nodeports; NOTE: this must be the last rule in this chain */"):
			why = fmt.Sprintf("line %d is the rule kube-proxy writes last in KUBE-SERVICES", n)
		case strings.Contains(t, " KUBE-SVC-") && strings.Contains(t, " cluster IP */"):
			why = fmt.Sprintf("line %d sends a cluster IP to its Service chain, as only KUBE-SERVICES does", n)
		default:
			continue
		}
		break
	}
	if why == "" || strings.Contains(text, "\nChain KUBE-SERVICES ") || strings.HasPrefix(text, "Chain KUBE-SERVICES ") {
		return headlessChain, ""
	}
	return "KUBE-SERVICES", why
}

// noChains is the error for rule lines of a listing without any Chain
// line: grep output, which does not say which chain each rule is in.
func (l *listing) noChains(text string) error {
	n := 0
	for line := range strings.Lines(text) {
		n++
		if t := strings.TrimSpace(line); t != "" && t[0] != '#' && listingCommand(t) == nil && !isListingColumns(t) {
			return l.errAt(strings.TrimRight(line, "\r\n"), n, 0, "rule lines with no Chain line (a grep of a listing?): which chain each rule is in is not shown, so they cannot be walked (iptables-save | grep keeps each rule's chain)")
		}
	}
	return l.errAt("", n, 0, "no Chain line")
}
