package ipvs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// listParser is parseIPSetList's state between lines.
type listParser struct {
	s       *IPSets
	cur     *IPSet
	members bool        // past Members:
	entries *token      // Number of entries:
	nLine   int         // its line
	cut     *ParseError // a block listing fewer members than its header counts
	cutNote string      // what is said of it when a set follows
	last    int         // the last line that is not blank
}

// end closes the current block on line n.
func (lp *listParser) end(n int) error {
	s, cur, entries := lp.s, lp.cur, lp.entries
	if !lp.members {
		switch {
		case cur.Type == "":
			return &ParseError{n, 1, fmt.Sprintf("set %s: its header ends before Type: and Members:", cur.Name)}
		case entries == nil:
			return &ParseError{n, 1, fmt.Sprintf("set %s: its header ends before Members:", cur.Name)}
		case entries.s != "0":
			// ipset list -t: the header alone.
			return &ParseError{lp.nLine, entries.col, fmt.Sprintf("set %s: its %s members are not listed (ipset list -t?): want the full listing", cur.Name, entries.s)}
		}
		s.settle(cur, cur.Line)
	}
	if entries != nil && !slices.Contains(cur.Options, "timeout") {
		// (Expired entries are counted, not listed, until collected.)
		if want, _ := strconv.Atoi(entries.s); len(cur.Members) < want {
			lp.cut = &ParseError{n, 1, fmt.Sprintf("set %s: the dump ends after %d of its %d members", cur.Name, len(cur.Members), want)}
			lp.cutNote = fmt.Sprintf("line %d: set %s: %d of the %d members its header counts are listed", cur.Line, cur.Name, len(cur.Members), want)
		}
	}
	lp.cur, lp.members, lp.entries = nil, false, nil
	return nil
}

// line reads line n of the listing.
func (lp *listParser) line(line string, n int) error {
	t := tokens(line, 0)
	if len(t) == 0 {
		if lp.cur != nil {
			if err := lp.end(n); err != nil {
				return err
			}
		}
		return nil
	}
	lp.last = n
	if strings.HasPrefix(t[0].s, "Name:") {
		return lp.name(line, t, n)
	}
	if lp.cur == nil {
		return &ParseError{n, t[0].col, fmt.Sprintf("%q: want a set's Name: line (ipset list)", t[0].s)}
	}
	if lp.members {
		return lp.s.addMember(lp.cur, t, n)
	}
	return lp.header(line, t, n)
}

// name reads a Name: line, n, which starts a set's block.
func (lp *listParser) name(line string, t []token, n int) error {
	if lp.cur != nil {
		if err := lp.end(n); err != nil {
			return err
		}
	}
	if lp.cut != nil {
		// Another set follows: not the end of the dump.
		lp.s.Notes = append(lp.s.Notes, lp.cutNote)
		lp.cut = nil
	}
	k := strings.Index(line, "Name:") + len("Name:")
	v := tokens(line[k:], k)
	if len(v) != 1 {
		return &ParseError{n, t[0].col, "Name: wants one set name"}
	}
	set, err := lp.s.newSet(v[0], n)
	if err != nil {
		return err
	}
	lp.cur = set
	return nil
}

// header reads line n of the current set's header.
func (lp *listParser) header(line string, t []token, n int) error {
	cur := lp.cur
	k := strings.IndexByte(line, ':')
	if k < 0 || k+1 < len(line) && !blank(line[k+1]) {
		return &ParseError{n, t[0].col, fmt.Sprintf("set %s: %q: want a header line (Type:, Header:, …) or Members:", cur.Name, t[0].s)}
	}
	v := tokens(line[k+1:], k+1)
	switch key := strings.TrimSpace(line[:k]); key {
	case "Type":
		if len(v) != 1 {
			return &ParseError{n, t[0].col, fmt.Sprintf("set %s: Type: wants one type", cur.Name)}
		}
		if err := setType(cur, v[0], n); err != nil {
			return err
		}
	case "Header":
		if err := lp.s.setOptions(cur, v, n); err != nil {
			return err
		}
	case "Number of entries":
		if len(v) != 1 {
			return &ParseError{n, t[0].col, fmt.Sprintf("set %s: Number of entries: wants a number", cur.Name)}
		}
		if c, err := strconv.Atoi(v[0].s); err != nil || c < 0 {
			return &ParseError{n, v[0].col, fmt.Sprintf("set %s: Number of entries %q: want a number", cur.Name, v[0].s)}
		}
		lp.entries, lp.nLine = &v[0], n
	case "Members":
		if cur.Type == "" {
			return &ParseError{n, t[0].col, fmt.Sprintf("set %s: Members: before Type:", cur.Name)}
		}
		lp.members = true
		lp.s.settle(cur, cur.Line)
	case "Revision", "Size in memory", "References":
	default:
		lp.s.Notes = append(lp.s.Notes, fmt.Sprintf("line %d: set %s: header %q not understood, left out", n, cur.Name, key))
	}
	return nil
}
