package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// lexToken is one word of a line, split the way iptables-restore splits
// them: on blanks, with double-quoted parts ("a b", \" and \\ escapes).
type lexToken struct {
	text   string
	col    int  // 0-based byte offset of the token in the line
	end    int  // offset just past the token
	quoted bool // some part was quoted: always an argument, never an option
}

// tokenize splits line[i:] into p.toks (reused between lines). An
// unterminated quote is an error pointing at the quote.
func (p *dumpParser) tokenize(line string, i, n int) ([]lexToken, error) {
	toks := p.toks[:0]
	for {
		i = lexSkipBlank(line, i)
		if i >= len(line) {
			break
		}
		// Fast path: a bare word.
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' && line[j] != '"' {
			j++
		}
		if j == len(line) || line[j] != '"' {
			toks = append(toks, lexToken{text: line[i:j], col: i, end: j})
			i = j
			continue
		}
		// Fast path: a whole "quoted word" without escapes.
		if j == i {
			k := strings.IndexByte(line[i+1:], '"') + i + 1
			if k > i && strings.IndexByte(line[i+1:k], '\\') < 0 &&
				(k+1 == len(line) || line[k+1] == ' ' || line[k+1] == '\t') {
				toks = append(toks, lexToken{text: line[i+1 : k], col: i, end: k + 1, quoted: true})
				i = k + 1
				continue
			}
		}
		t, err := p.slowToken(line, i, n)
		if err != nil {
			p.toks = toks
			return nil, err
		}
		toks = append(toks, t)
		i = t.end
	}
	p.toks = toks
	return toks, nil
}

// slowToken reads a word mixing bare and quoted parts, or with escapes.
// Inside quotes a backslash takes the next byte literally, as in
// iptables-restore.
func (p *dumpParser) slowToken(line string, i, n int) (lexToken, error) {
	var b strings.Builder
	t := lexToken{col: i}
	quote := -1
	for i < len(line) {
		c := line[i]
		if quote >= 0 {
			switch {
			case c == '\\' && i+1 < len(line):
				b.WriteByte(line[i+1])
				i += 2
			case c == '"':
				quote = -1
				i++
			default:
				b.WriteByte(c)
				i++
			}
			continue
		}
		if c == ' ' || c == '\t' {
			break
		}
		if c == '"' {
			quote, t.quoted = i, true
		} else {
			b.WriteByte(c)
		}
		i++
	}
	if quote >= 0 {
		return t, p.errAt(line, n, quote, "unterminated quoted string: the line is truncated or a quote is missing")
	}
	t.text, t.end = b.String(), i
	return t, nil
}

// lexGenericOption maps iptables' own options to a letter, 0 for others.
func lexGenericOption(s string) byte {
	switch s {
	case "-s", "--source", "--src":
		return 's'
	case "-d", "--destination", "--dst":
		return 'd'
	case "-i", "--in-interface":
		return 'i'
	case "-o", "--out-interface":
		return 'o'
	case "-p", "--protocol":
		return 'p'
	case "-f", "--fragment":
		return 'f'
	case "-m", "--match":
		return 'm'
	case "-j", "--jump":
		return 'j'
	case "-g", "--goto":
		return 'g'
	case "-c", "--set-counters":
		return 'c'
	}
	return 0
}

func lexBang(t lexToken) bool { return !t.quoted && t.text == "!" }

// lexOptionish reports whether t ends a greedy run of arguments.
func lexOptionish(t lexToken) bool {
	return !t.quoted && t.text != "" && (t.text[0] == '-' || t.text[0] == '!')
}

// parseAddrArg parses ADDR or ADDR/LEN or ADDR/MASK (dotted for IPv4) into a
// masked prefix; a bare address gets the full length (/32, /128).
func parseAddrArg(s string) (netip.Prefix, error) {
	as, ms, hasMask := strings.Cut(s, "/")
	a, err := netip.ParseAddr(as)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad address %q: not an IP address", s)
	}
	bits := a.BitLen()
	if hasMask {
		if strings.ContainsAny(ms, ".:") {
			m, err := netip.ParseAddr(ms)
			if err != nil || m.BitLen() != a.BitLen() || m.Zone() != "" {
				return netip.Prefix{}, fmt.Errorf("bad address %q: bad mask %q", s, ms)
			}
			if bits = dottedMaskLen(m.AsSlice()); bits < 0 {
				return netip.Prefix{}, fmt.Errorf("bad address %q: mask %s is not contiguous", s, ms)
			}
		} else {
			v, err := strconv.Atoi(ms)
			if err != nil || v < 0 || v > a.BitLen() || !lexDigits(ms) {
				return netip.Prefix{}, fmt.Errorf("bad address %q: bad prefix length %q", s, ms)
			}
			bits = v
		}
	}
	return netip.PrefixFrom(a, bits).Masked(), nil
}

// dottedMaskLen returns the prefix length of a contiguous mask, or -1.
func dottedMaskLen(m []byte) int {
	n, done := 0, false
	for _, b := range m {
		for bit := 7; bit >= 0; bit-- {
			set := b&(1<<bit) != 0
			switch {
			case set && done:
				return -1
			case set:
				n++
			default:
				done = true
			}
		}
	}
	return n
}

// checkFamily records the family of the first address and rejects an
// address of the other family.
func (p *dumpParser) checkFamily(a netip.Addr, line string, n, col int) error {
	fam := famIPv4
	if !a.Is4() {
		fam = famIPv6
	}
	switch {
	case p.family == "":
		p.family, p.familyB = fam, fmt.Sprintf("the first address, on line %d", n)
	case p.family != fam && p.familyB == familyGiven:
		return p.errAt(line, n, col, "an %s address (%s) in a dump given as %s: %s", fam, a, p.family, wrongFamilyHint(p.family))
	case p.family != fam:
		return p.errAt(line, n, col, "%s address %s in an %s dump (family from %s)", fam, a, p.family, p.familyB)
	}
	return nil
}

// redaction reports whether s is what people put where they removed an
// address before publishing a dump: runs of x, X, * or ? between dots or
// colons (xxx.xxx.xxx.xxx, x.x.x.x/32), a <placeholder>, or a word
// saying so (REDACTED).
func redaction(s string) bool {
	a, _, _ := strings.Cut(s, "/")
	if strings.HasPrefix(a, "<") && strings.HasSuffix(a, ">") || strings.Contains(strings.ToLower(a), "redacted") {
		return true
	}
	marks := 0
	for _, c := range a {
		switch c {
		case 'x', 'X', '*', '?':
			marks++
		case '.', ':':
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return marks > 0 && strings.ContainsAny(a, ".:")
}
