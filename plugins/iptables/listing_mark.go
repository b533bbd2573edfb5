package iptables

import (
	"slices"
	"strconv"
	"strings"
)

// Some iptables-nft releases list a mark match (-m mark --mark V/M,
// which they store as native nf_tables expressions) as nothing at all:
// kube-proxy's rules that test its marks then read as unconditional, so
// KUBE-POSTROUTING would return every packet and masquerade none. A
// listing shows which: kube-proxy's own rules, known by their chain,
// target and comment, with no mark match where every release of
// kube-proxy writes one. Those are read with the match kube-proxy writes,
// and a note says so.

// lostMark is the mark match kube-proxy writes on a rule of chain to
// target that the listing shows without it (bare: the rule shows no
// match but its comment; matches are the ones it shows), or nil.
func (l *listing) lostMark(chain, target string, bare bool, matches []string, n int) []string {
	if slices.Contains(matches, "mark") {
		return nil
	}
	comment := ""
	if i := slices.Index(matches, "--comment"); i >= 0 && i+1 < len(matches) {
		comment = strings.Trim(matches[i+1], `"`)
	}
	defer func() {
		// A rule of another's that shows no match but a comment, and
		// ends the chain's walk there, may have lost one too.
		if bare && (target == "RETURN" || target == "ACCEPT" || target == "DROP") && len(matches) <= 4 {
			l.bareVerdicts = append(l.bareVerdicts, n)
		}
	}()
	var m []string
	switch {
	case chain == "KUBE-POSTROUTING" && target == "RETURN" && bare && comment == "":
		m = []string{"-m", "mark", "!", "--mark", l.mark("0x4000", "MARK xor ")}
	case chain == "KUBE-FORWARD" && target == "ACCEPT" && comment == "kubernetes forwarding rules" && len(matches) == 4:
		m = []string{"-m", "mark", "--mark", l.mark("0x4000", "MARK xor ")}
	case chain == "KUBE-FIREWALL" && target == "DROP" && comment == "kubernetes firewall for dropping marked packets" && len(matches) == 4:
		m = []string{"-m", "mark", "--mark", "0x8000/0x8000"}
	default:
		return nil
	}
	l.note(n, "kube-proxy writes this rule with %s, which the listing does not show (some iptables-nft releases list a mark match as nothing): read with it; %s",
		strings.Join(m, " "), listingHint)
	l.lostMarks = true
	bare = false
	return m
}

// noteLostMarks says, of a listing that lost kube-proxy's mark matches,
// which other rules show no match and may have lost one too.
func (l *listing) noteLostMarks() {
	if !l.lostMarks || len(l.bareVerdicts) == 0 {
		return
	}
	lines := make([]string, 0, len(l.bareVerdicts))
	for _, n := range l.bareVerdicts {
		lines = append(lines, strconv.Itoa(n))
	}
	which := "the rules on lines " + strings.Join(lines, ", ") + ", which show no match,"
	if len(lines) == 1 {
		which = "the rule on line " + lines[0] + ", which shows no match,"
	}
	l.note(0, "this listing lists mark matches as nothing, so %s may have lost one too: read as shown, unconditional; %s", which, listingHint)
}

// mark is V/V for the first value printed after prefix ("MARK xor 0x4000"
// in KUBE-POSTROUTING), else def.
func (l *listing) mark(def, prefix string) string {
	v := def
	if i := strings.Index(l.text, prefix+"0x"); i >= 0 {
		f := strings.Fields(l.text[i+len(prefix):])
		v = f[0]
	}
	return v + "/" + v
}
