package iptables

import (
	"fmt"
	"slices"
	"strings"
)

// iptables -L prints a table chain by chain for people: a "Chain NAME
// (policy P ...)" or "Chain NAME (N references)" line, a line of column
// names, and a line per rule whose matches and target options each
// extension prints in its own words ("tcp dpt:80", "MARK or 0x4000").
// It is what users paste most. A listing is read by translating each line
// back into the iptables-save form (one line for one, so that notes and
// errors name the listing's lines) and parsing that as headerless
// iptables -S of one table, guessed once from all its chains. What a
// listing cannot show is said in notes: the table, and without -v the
// interfaces, without -n the addresses and ports it printed as names.

// listingHint is the hint of every error and note about what a listing
// lacks.
const listingHint = "for a complete answer give iptables-save output"

// isListing reports whether text is iptables -L output: its first line
// that is not blank is a Chain line or a line of column names, or it is
// not the start of any form iptables-save or -S writes and some line is
// a Chain line (a listing pasted from the middle of a chain).
func isListing(text string) bool {
	first := ""
	for l := range strings.Lines(text) {
		if t := strings.TrimSpace(l); t != "" && t[0] != '#' {
			first = t
			break
		}
	}
	switch {
	case first == "":
		return false
	case strings.HasPrefix(first, "Chain "):
		_, ok := listingChainLine(first)
		return ok
	case isListingColumns(first):
		return true
	case listingCommand(first) != nil:
		return true
	case strings.ContainsAny(first[:1], "*:-[#") || strings.HasPrefix(first, "COMMIT"):
		return false
	}
	return hasChainLine(text) || isListingRule(first)
}

// hasChainLine reports whether some line of text is a Chain line.
func hasChainLine(text string) bool {
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, "Chain ") {
			if _, ok := listingChainLine(strings.TrimSpace(l)); ok {
				return true
			}
		}
	}
	return false
}

// isListingRule reports whether s looks like a rule line of a listing:
// an opt column ("--", "-f", "!f") after a protocol, with a source and a
// destination after it (and maybe in and out before them).
func isListingRule(s string) bool {
	f := strings.Fields(s)
	for k := 1; k < len(f)-2 && k <= 5; k++ {
		if isListingOpt(f[k]) && strings.Trim(strings.TrimPrefix(f[k-1], "!"), "abcdefghijklmnopqrstuvwxyz0123456789-") == "" {
			return true
		}
	}
	return false
}

// listingChain is one Chain line.
type listingChain struct {
	name   string
	policy string // "" for a chain of the user's
	line   int
}

// listingChainLine reads "Chain NAME (policy P[ N packets, M bytes])" or
// "Chain NAME (N references)".
func listingChainLine(s string) (listingChain, bool) {
	rest, ok := strings.CutPrefix(s, "Chain ")
	if !ok {
		return listingChain{}, false
	}
	name, paren, ok := strings.Cut(rest, " (")
	if !ok || name == "" || !strings.HasSuffix(paren, ")") || strings.ContainsAny(name, " \t") {
		return listingChain{}, false
	}
	f := strings.Fields(strings.TrimSuffix(paren, ")"))
	switch {
	case len(f) >= 2 && f[0] == "policy":
		return listingChain{name: name, policy: f[1]}, true
	case len(f) == 2 && (f[1] == "references" || f[1] == "reference") && lexDigits(f[0]):
		return listingChain{name: name}, true
	}
	return listingChain{}, false
}

// isListingColumns reports whether s is the line of column names.
func isListingColumns(s string) bool {
	f := strings.Fields(s)
	return len(f) >= 5 && (f[0] == "num" || f[0] == "pkts" || f[0] == "target") &&
		strings.Contains(s, " source ") && strings.HasSuffix(strings.TrimSpace(s), "destination")
}

// parseListing is parse for a listing: p's options, family and notes
// apply as for any input.
func (p *dumpParser) parseListing(text string) (*Ruleset, error) {
	l := &listing{src: parseSourceName(p.src)}
	save, err := l.translate(text)
	if err != nil {
		return nil, err
	}
	table, why := p.opts.Table, "the table given"
	switch {
	case table != "":
	case l.cmdTable != "":
		table, why = l.cmdTable, fmt.Sprintf("the table the command on line %d names", l.cmdLine)
	default:
		table, why = l.guessTable()
		why = "the listing does not name its table; guessed: " + why
	}
	p.opts.Table = table
	if p.family == "" && l.v6 > 0 {
		p.family, p.familyB = famIPv6, fmt.Sprintf("the address ::/0 on line %d", l.v6)
	}
	if err := p.run(save); err != nil {
		return nil, fmt.Errorf("iptables: reading the listing %s as iptables-save: %w", l.src, err)
	}
	p.rs.Family = p.family
	if p.rs.Family == "" {
		p.rs.Family = famIPv4
	}
	parsed := p.rs.Notes
	p.rs.Notes = append(l.summary(table, why), l.notes...)
	p.rs.Notes = append(p.rs.Notes, parsed...)
	if cut := l.cutReason(table); cut != "" {
		p.rs.Excerpt = cut
	} else if cut := missingJumps(p.rs.Tables[table]); cut != "" {
		p.rs.Excerpt = cut
	} else if p.opts.Excerpt && p.rs.Excerpt == "" {
		p.rs.Excerpt = "an iptables -L listing given as an excerpt"
	}
	return p.rs, nil
}

// summary are the notes that head a listing's: what was read, as which
// table and why, and what the listing's form does not show.
func (l *listing) summary(table, why string) []Note {
	form := "iptables -L"
	if !l.names {
		form += " -n"
	}
	if l.verbose {
		form += " -v"
	}
	if l.lineNumbers {
		form += " --line-numbers"
	}
	out := []Note{
		{Message: fmt.Sprintf("read from %s output, translated rule by rule into iptables-save form; %s", form, listingHint)},
		{Message: fmt.Sprintf("read as the %s table (%s)", table, why)},
	}
	if !l.verbose && l.rules > 0 {
		out = append(out, Note{Message: "listed without -v: the rules' in and out interfaces are not shown, so interface matches " +
			"(such as Docker's ! -i docker0) are not known and are read as absent"})
	}
	if l.names {
		out = append(out, Note{Message: "listed without -n: addresses and ports are printed as names; " +
			"a name read as an address or port is noted on its line, any other is kept unread and its rule taken as not matching"})
	}
	return out
}

// cutReason says why the listing is an excerpt of the table: rules before
// its first Chain line, or built-in chains of the table it lacks.
func (l *listing) cutReason(table string) string {
	if l.headless > 0 {
		return fmt.Sprintf("an iptables -L listing that starts inside a chain whose Chain line is not in it (%s)", listingLines(l.headless))
	}
	have := map[string]bool{}
	for _, c := range l.chains {
		have[c.name] = true
	}
	var missing []string
	for _, b := range listingBuiltins(table) {
		if !have[b] {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("an iptables -L listing of some chains of the %s table, without its built-in chain(s) %s", table, strings.Join(missing, ", "))
	}
	return ""
}

// listingBuiltins are the built-in chains iptables -L prints for a table.
func listingBuiltins(table string) []string {
	switch table {
	case "nat":
		return []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}
	case "filter", "security":
		return []string{"INPUT", "FORWARD", "OUTPUT"}
	case "mangle":
		return []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}
	case "raw":
		return []string{"PREROUTING", "OUTPUT"}
	}
	return nil
}

// listingCommand reads a line that holds the command that printed the
// listing ("root@node:~# iptables -t nat -L -n", "$ sudo iptables
// -nvL"): its words after the program's name; nil for another line.
func listingCommand(s string) []string {
	f := strings.Fields(s)
	for i, w := range f {
		base := w[strings.LastIndexByte(w, '/')+1:]
		if base != "iptables" && base != "ip6tables" && base != "iptables-legacy" && base != "iptables-nft" {
			continue
		}
		if i > 0 && f[i-1] != "sudo" && !strings.ContainsAny(f[i-1][len(f[i-1])-1:], "#$>") {
			return nil // a word of a rule's comment, not a command
		}
		for _, a := range f[i+1:] {
			if a == "--list" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "L")) {
				return f[i+1:]
			}
		}
		return nil
	}
	return nil
}

// listingCommandTable is the table a command names: -t T, --table T,
// --table=T, or filter, iptables' default.
func listingCommandTable(args []string) string {
	for i, a := range args {
		switch {
		case (a == "-t" || a == "--table") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--table="):
			return strings.TrimPrefix(a, "--table=")
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "t") && i+1 < len(args):
			return args[i+1] // -nvLt nat
		}
	}
	return "filter"
}

// missingJumps says which chains t's rules jump to that the listing does
// not list ("" when none): the kernel holds every chain a rule jumps to,
// so such a listing was cut.
func missingJumps(t *Table) string {
	if t == nil {
		return ""
	}
	var missing []string
	for _, name := range t.ChainOrder {
		for _, r := range t.Chain(name).Rules() {
			if jumpsToChain(r) && t.Chain(r.Target) == nil && !slices.Contains(missing, r.Target) {
				missing = append(missing, r.Target)
			}
		}
	}
	if len(missing) == 0 {
		return ""
	}
	if len(missing) > 3 {
		missing = append(missing[:3], "…")
	}
	return "an iptables -L listing whose rules jump to chains it does not list (" + strings.Join(missing, ", ") + "): the paste was cut"
}
