package iptables

import (
	"fmt"
	"strings"
)

// listing is the state of one listing's translation.
type listing struct {
	src    string
	chains []listingChain
	notes  []Note
	// The columns, from the first line of column names: --line-numbers
	// adds num, -v adds pkts, bytes, in and out.
	lineNumbers, verbose bool
	// names: some address or interface was printed as a name ("anywhere",
	// "any", a host name): the listing was taken without -n.
	names bool
	rules int
	// headless is the last line of rules before the first Chain line.
	headless int
	targets  map[string]int
	// cmdTable is the table the command on line cmdLine names.
	cmdTable string
	cmdLine  int
	// text is the listing.
	text string
	// lostMarks: kube-proxy's mark matches are missing from the listing;
	// bareVerdicts are the lines of other rules that show no match but a
	// comment and end the walk of their chain.
	lostMarks    bool
	bareVerdicts []int
	// v6 is the first line whose source or destination is ::/0, as
	// ip6tables -L -n prints any address.
	v6 int
}

// isListingPrompt reports whether s is a shell prompt alone
// ("root@node:~#"), as pasted after a listing's end.
func isListingPrompt(s string) bool {
	return !strings.ContainsAny(s, " \t") && strings.Contains(s, "@") && strings.ContainsAny(s[len(s)-1:], "#$")
}

// headlessChain holds the rules of a listing that starts inside a chain:
// its name is above what was pasted.
const headlessChain = "CUT-ABOVE-LISTING"

// translate turns the listing into headerless iptables -S lines, one for
// each of its lines (blank for a line of column names).
func (l *listing) translate(text string) (string, error) {
	l.targets, l.text = map[string]int{}, text
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); isListingColumns(line) {
			l.lineNumbers, l.verbose = f[0] == "num", strings.Contains(line, " pkts ") || f[0] == "pkts"
			break
		}
	}
	if !hasChainLine(text) {
		return "", l.noChains(text)
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/4)
	headName, headWhy := headlessName(text)
	chain := ""
	seen := map[string]int{}
	n := 0
	for line := range strings.Lines(text) {
		n++
		line = strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(line)
		switch {
		case t == "" || isListingColumns(t):
		case listingCommand(t) != nil:
			table := listingCommandTable(listingCommand(t))
			if l.cmdTable != "" && table != l.cmdTable {
				return "", l.errAt(line, n, 0, "this command lists the %s table, the one on line %d the %s table: give one table's listing", table, l.cmdLine, l.cmdTable)
			}
			if l.cmdTable == "" {
				l.cmdTable, l.cmdLine = table, n
			}
		case isListingPrompt(t):
		case t[0] == '#':
			b.WriteString(t)
		case strings.HasPrefix(t, "Chain "):
			c, ok := listingChainLine(t)
			if !ok {
				return "", l.errAt(line, n, 0, "a Chain line is \"Chain NAME (policy P)\" or \"Chain NAME (N references)\"")
			}
			if prev, dup := seen[c.name]; dup {
				return "", l.errAt(line, n, 0, "chain %s is listed twice (first on line %d): were two listings pasted together? give one table's", c.name, prev)
			}
			c.line, seen[c.name], chain = n, n, c.name
			l.chains = append(l.chains, c)
			if c.policy != "" {
				fmt.Fprintf(&b, "-P %s %s", c.name, c.policy)
			} else {
				fmt.Fprintf(&b, "-N %s", c.name)
			}
		default:
			if chain == "" {
				chain = headName
				seen[chain] = n
			}
			if l.chains == nil {
				l.headless = n
			}
			save, err := l.rule(line, n, chain)
			if err != nil {
				return "", err
			}
			l.rules++
			b.WriteString(save)
		}
		b.WriteByte('\n')
	}
	l.noteLostMarks()
	switch {
	case l.headless > 0 && headName == headlessChain:
		l.note(0, "%s are rules of a chain whose Chain line is above the listing's start: read into a chain named %s, which no rule jumps to",
			listingLines(l.headless), headlessChain)
	case l.headless > 0:
		l.note(0, "%s are rules of a chain whose Chain line is above the listing's start: read as the end of %s (%s); its rules before them are not known",
			listingLines(l.headless), headName, headWhy)
	}
	return b.String(), nil
}

func (l *listing) note(n int, format string, args ...any) {
	nt := Note{Line: n, Message: fmt.Sprintf(format, args...)}
	if k := len(l.notes); k > 0 && l.notes[k-1] == nt {
		return // the same name read twice on a line
	}
	l.notes = append(l.notes, nt)
}

func (l *listing) errAt(line string, n, col int, format string, args ...any) error {
	return &ParseError{Source: l.src, Line: n, Column: col + 1, Text: line,
		Msg: "iptables -L listing: " + fmt.Sprintf(format, args...) + "; " + listingHint}
}

// listingScan reads a line's blank-separated columns.
type listingScan struct {
	s string
	i int
}

// next is the next column and where it starts ("" at the end).
func (sc *listingScan) next() (string, int) {
	i := lexSkipBlank(sc.s, sc.i)
	j := i
	for j < len(sc.s) && sc.s[j] != ' ' && sc.s[j] != '\t' {
		j++
	}
	sc.i = j
	return sc.s[i:j], i
}

func (sc *listingScan) peek(k int) string {
	save := sc.i
	var t string
	for range k + 1 {
		t, _ = sc.next()
	}
	sc.i = save
	return t
}

func isListingOpt(s string) bool { return s == "--" || s == "-f" || s == "!f" }

// rule translates one rule line of chain into an -A line.
func (l *listing) rule(line string, n int, chain string) (string, error) {
	sc := &listingScan{s: line}
	want := func(what string, ok func(string) bool) (string, error) {
		t, col := sc.next()
		if t == "" || !ok(t) {
			if t == "" {
				col = len(line)
			}
			return "", l.errAt(line, n, col, "expected %s: not a rule line of a listing", what)
		}
		return t, nil
	}
	if l.lineNumbers {
		if _, err := want("the rule's number (--line-numbers)", lexDigits); err != nil {
			return "", err
		}
	}
	if l.verbose {
		for _, what := range []string{"the packet count (-v)", "the byte count (-v)"} {
			if _, err := want(what, isListingCount); err != nil {
				return "", err
			}
		}
	}
	target := ""
	if !isListingOpt(sc.peek(1)) {
		target, _ = sc.next()
	}
	prot, err := want("a protocol", func(s string) bool { return s != "" })
	if err != nil {
		return "", err
	}
	opt := ""
	if isListingOpt(sc.peek(0)) {
		opt, _ = sc.next()
	}
	var in, out string
	if l.verbose {
		if in, err = want("the in interface (-v)", func(string) bool { return true }); err != nil {
			return "", err
		}
		if out, err = want("the out interface (-v)", func(string) bool { return true }); err != nil {
			return "", err
		}
	}
	src, err := want("the source", func(string) bool { return true })
	if err != nil {
		return "", err
	}
	dst, err := want("the destination", func(string) bool { return true })
	if err != nil {
		return "", err
	}
	args := []string{"-A", chain}
	args = append(args, l.addr(src, "-s", n)...)
	args = append(args, l.addr(dst, "-d", n)...)
	args = append(args, l.iface(in, "-i")...)
	args = append(args, l.iface(out, "-o")...)
	args = append(args, listingProto(prot)...)
	switch opt {
	case "-f":
		args = append(args, "-f")
	case "!f":
		args = append(args, "!", "-f")
	}
	ex := l.extras(strings.TrimSpace(line[sc.i:]), target, n)
	args = append(args, ex.matches...)
	args = append(args, l.lostMark(chain, target, len(args) == 2+len(ex.matches), ex.matches, n)...)
	if target != "" {
		l.targets[target]++
		jump := "-j"
		if ex.goTo {
			jump = "-g"
		}
		args = append(args, jump, target)
		args = append(args, ex.targetOpts...)
	}
	return strings.Join(args, " "), nil
}

// isListingCount is a packet or byte count: digits, with -x not given
// maybe a K, M, G or T suffix.
func isListingCount(s string) bool {
	if k := len(s) - 1; k > 0 && strings.IndexByte("KMGTP", s[k]) >= 0 {
		s = s[:k]
	}
	return lexDigits(s)
}

// listingProto is -p for the prot column: a name, or a number as
// iptables 1.8.9 and later print with -n.
func listingProto(p string) []string {
	neg := strings.HasPrefix(p, "!")
	p = strings.ToLower(strings.TrimPrefix(p, "!"))
	switch p {
	case "all", "0":
		return nil
	case "1":
		p = "icmp"
	case "6":
		p = "tcp"
	case "17":
		p = "udp"
	case "132":
		p = "sctp"
	case "58":
		p = "ipv6-icmp"
	case "47":
		p = "gre"
	}
	if neg {
		return []string{"!", "-p", p}
	}
	return []string{"-p", p}
}

// listingLines names lines 1 to n.
func listingLines(n int) string {
	if n == 1 {
		return "line 1"
	}
	return fmt.Sprintf("lines 1-%d", n)
}
