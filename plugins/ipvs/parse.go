package ipvs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParseError is a line of a dump the reader cannot take, with where.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d col %d: %s", e.Line, e.Col, e.Msg) }

// Parse reads an IPVS table from ipvsadm's listing (ipvsadm -Ln, with or
// without --stats columns left out) or its save form (ipvsadm-save -n,
// ipvsadm -Sn): whichever the text is.
func Parse(text string) (*Table, error) {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "-A" || f[0] == "-a" {
			return parseSave(text)
		}
		return parseList(text)
	}
	return &Table{}, nil
}

// col is the 1-based column of a field of line: the first field equal
// to it, counted as strings.Fields splits (a field's text can occur
// earlier inside another, so a plain search would point wrong).
func col(line, field string) int {
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		if start < i && line[start:i] == field {
			return start + 1
		}
	}
	return 1
}

// parseList reads ipvsadm -Ln.
func parseList(text string) (*Table, error) {
	t := &Table{}
	var cur *Virtual
	hidden := false // under a virtual server whose address is redacted
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case f[0] == "->" && hidden:
			continue
		case (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP") && len(f) > 1 && redacted(f[1]):
			t.Notes = append(t.Notes, redactedVirtual(f[0], f[1], n))
			t.hidden++
			cur, hidden = nil, true
			continue
		case strings.HasPrefix(f[0], "IP") && strings.HasPrefix(line, "IP Virtual Server"),
			f[0] == "Prot", f[0] == "->" && len(f) > 1 && f[1] == "RemoteAddress:Port":
			continue // headers
		case strings.Trim(line, ". \t\r") == "":
			// An excerpt's elision (a ticket's "..."): what it hides is
			// not in the table, and the notes say so.
			t.Notes = append(t.Notes, fmt.Sprintf("line %d: %q: part of the table was left out of this capture", n, strings.TrimSpace(line)))
			cur, hidden = nil, false
			continue
		case f[0] == "->":
			if cur == nil {
				return nil, &ParseError{n, col(line, "->"), "a real server before any virtual server"}
			}
			r, err := listReal(line, f, n)
			if err != nil {
				return nil, err
			}
			if r.Redacted {
				t.Notes = append(t.Notes, redactedReal(cur, f[1], n))
			}
			cur.Reals = append(cur.Reals, r)
		case f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP" || f[0] == "FWM":
			v, notes, err := listVirtual(line, f, n)
			if err != nil {
				return nil, err
			}
			t.Notes = append(t.Notes, notes...)
			t.Virtuals = append(t.Virtuals, v)
			cur, hidden = v, false
		default:
			return nil, &ParseError{n, col(line, f[0]), fmt.Sprintf("%q: want a virtual server (TCP, UDP, SCTP or FWM) or a real server (->)", f[0])}
		}
	}
	return t, nil
}

// listVirtual reads "TCP  10.96.0.10:80 rr (flag-1) persistent 10800 mask 255.255.255.255 ops".
func listVirtual(line string, f []string, n int) (*Virtual, []string, error) {
	if len(f) < 3 {
		return nil, nil, &ParseError{n, 1, "a virtual server needs a protocol, an address and a scheduler"}
	}
	v := &Virtual{Line: n, Scheduler: f[2]}
	if err := setService(v, f[0], f[1], line, n); err != nil {
		return nil, nil, err
	}
	var notes []string
	for j := 3; j < len(f); j++ {
		switch {
		case strings.HasPrefix(f[j], "(") && strings.HasSuffix(f[j], ")"):
			v.SchedFlags = strings.Split(strings.Trim(f[j], "()"), ",")
		case f[j] == "persistent" && j+1 < len(f):
			s, err := strconv.ParseInt(f[j+1], 10, 32)
			if err != nil || s <= 0 {
				return nil, nil, &ParseError{n, col(line, f[j+1]), fmt.Sprintf("persistent %q: want a number of seconds", f[j+1])}
			}
			v.Persistent = int32(s)
			j++
		case f[j] == "mask" && j+1 < len(f):
			v.Netmask = f[j+1]
			j++
		case f[j] == "ops":
			v.OnePacket = true
		default:
			notes = append(notes, fmt.Sprintf("line %d: %s: %q not understood, kept out of the analysis", n, v.Key(), f[j]))
		}
	}
	return v, notes, nil
}

// setService reads the protocol and address (or firewall mark) of a
// virtual server.
func setService(v *Virtual, proto, addr, line string, n int) error {
	if proto == "FWM" || proto == "-f" {
		m, err := strconv.ParseUint(addr, 0, 32)
		if err != nil {
			return &ParseError{n, col(line, addr), fmt.Sprintf("firewall mark %q: want a number", addr)}
		}
		v.FWMark = uint32(m)
		return nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return &ParseError{n, col(line, addr), fmt.Sprintf("%q: want ADDRESS:PORT ([ADDRESS]:PORT for IPv6), numeric (ipvsadm -n)", addr)}
	}
	v.Protocol = proto
	v.Addr = ap
	return nil
}

// listReal reads "  -> 10.244.1.5:8080   Masq  1  0  0".
func listReal(line string, f []string, n int) (Real, error) {
	if len(f) < 4 {
		return Real{}, &ParseError{n, col(line, "->"), "a real server needs an address, a forwarding method and a weight"}
	}
	ap, err := netip.ParseAddrPort(f[1])
	hidden := err != nil && redacted(f[1])
	if err != nil && !hidden {
		return Real{}, &ParseError{n, col(line, f[1]), fmt.Sprintf("%q: want ADDRESS:PORT, numeric (ipvsadm -n)", f[1])}
	}
	r := Real{Addr: ap, Forward: f[2], Line: n, Redacted: hidden}
	switch r.Forward {
	case "Masq", "Route", "Tunnel", "Local":
	default:
		return Real{}, &ParseError{n, col(line, f[2]), fmt.Sprintf("forwarding %q: want Masq, Route, Tunnel or Local", f[2])}
	}
	if r.Weight, err = strconv.Atoi(f[3]); err != nil || r.Weight < 0 {
		return Real{}, &ParseError{n, col(line, f[3]), fmt.Sprintf("weight %q: want a number", f[3])}
	}
	if len(f) >= 6 {
		// Connection counts: absent from other listings (--stats, --rate
		// print other columns), so only read when they are numbers.
		a, errA := strconv.Atoi(f[4])
		b, errB := strconv.Atoi(f[5])
		if errA == nil && errB == nil {
			r.ActiveConn, r.InActConn = a, b
		}
	}
	return r, nil
}
