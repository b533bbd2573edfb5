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
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case strings.HasPrefix(f[0], "IP") && strings.HasPrefix(line, "IP Virtual Server"),
			f[0] == "Prot", f[0] == "->" && len(f) > 1 && f[1] == "RemoteAddress:Port":
			continue // headers
		case strings.Trim(line, ". \t\r") == "":
			// An excerpt's elision (a ticket's "..."): what it hides is
			// not in the table, and the notes say so.
			t.Notes = append(t.Notes, fmt.Sprintf("line %d: %q: part of the table was left out of this capture", n, strings.TrimSpace(line)))
			cur = nil
			continue
		case f[0] == "->":
			if cur == nil {
				return nil, &ParseError{n, col(line, "->"), "a real server before any virtual server"}
			}
			r, err := listReal(line, f, n)
			if err != nil {
				return nil, err
			}
			cur.Reals = append(cur.Reals, r)
		case f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP" || f[0] == "FWM":
			v, notes, err := listVirtual(line, f, n)
			if err != nil {
				return nil, err
			}
			t.Notes = append(t.Notes, notes...)
			t.Virtuals = append(t.Virtuals, v)
			cur = v
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
	if err != nil {
		return Real{}, &ParseError{n, col(line, f[1]), fmt.Sprintf("%q: want ADDRESS:PORT, numeric (ipvsadm -n)", f[1])}
	}
	r := Real{Addr: ap, Forward: f[2], Line: n}
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

// saveForward maps ipvsadm-save's forwarding options to the listing's
// names.
var saveForward = map[string]string{"-m": "Masq", "-g": "Route", "-i": "Tunnel"}

// parseSave reads ipvsadm-save -n: "-A -t 10.96.0.10:80 -s rr -p 10800"
// and "-a -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1".
func parseSave(text string) (*Table, error) {
	t := &Table{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if (f[0] != "-A" && f[0] != "-a") || len(f) < 3 {
			return nil, &ParseError{n, 1, fmt.Sprintf("%q: want -A (a virtual server) or -a (a real server) and the service", line)}
		}
		proto, ok := map[string]string{"-t": "TCP", "-u": "UDP", "--sctp-service": "SCTP", "-f": "FWM"}[f[1]]
		if !ok {
			return nil, &ParseError{n, col(line, f[1]), fmt.Sprintf("%q: want -t, -u, --sctp-service or -f", f[1])}
		}
		key := &Virtual{}
		if err := setService(key, protoOrMark(proto, f[1]), f[2], line, n); err != nil {
			return nil, err
		}
		if f[0] == "-A" {
			key.Line, key.Scheduler = n, "wlc" // ipvsadm's default scheduler
			if err := saveVirtualOptions(t, key, f[3:], line, n); err != nil {
				return nil, err
			}
			t.Virtuals = append(t.Virtuals, key)
			continue
		}
		v := t.findKey(key)
		if v == nil {
			return nil, &ParseError{n, col(line, f[2]), fmt.Sprintf("a real server of %s, which no -A line before declares", key.Key())}
		}
		r, err := saveReal(f[3:], line, n)
		if err != nil {
			return nil, err
		}
		v.Reals = append(v.Reals, r)
	}
	return t, nil
}

func protoOrMark(proto, opt string) string {
	if opt == "-f" {
		return "FWM"
	}
	return proto
}

func (t *Table) findKey(k *Virtual) *Virtual {
	for _, v := range t.Virtuals {
		if v.Protocol == k.Protocol && v.Addr == k.Addr && v.FWMark == k.FWMark {
			return v
		}
	}
	return nil
}

func saveVirtualOptions(t *Table, v *Virtual, f []string, line string, n int) error {
	for j := 0; j < len(f); j++ {
		arg := func() (string, error) {
			if j+1 >= len(f) {
				return "", &ParseError{n, col(line, f[j]), f[j] + " needs a value"}
			}
			j++
			return f[j], nil
		}
		switch f[j] {
		case "-s", "--scheduler":
			s, err := arg()
			if err != nil {
				return err
			}
			v.Scheduler = s
		case "-b", "--sched-flags":
			s, err := arg()
			if err != nil {
				return err
			}
			v.SchedFlags = strings.Split(s, ",")
		case "-p", "--persistent":
			s, err := arg()
			if err != nil {
				return err
			}
			p, perr := strconv.ParseInt(s, 10, 32)
			if perr != nil || p <= 0 {
				return &ParseError{n, col(line, s), fmt.Sprintf("persistence %q: want a number of seconds", s)}
			}
			v.Persistent = int32(p)
		case "-M", "--netmask":
			s, err := arg()
			if err != nil {
				return err
			}
			v.Netmask = s
		case "-o", "--ops":
			v.OnePacket = true
		default:
			t.Notes = append(t.Notes, fmt.Sprintf("line %d: %s: %q not understood, kept out of the analysis", n, v.Key(), f[j]))
		}
	}
	return nil
}

func saveReal(f []string, line string, n int) (Real, error) {
	r := Real{Forward: "Route", Weight: 1, Line: n} // ipvsadm's defaults
	for j := 0; j < len(f); j++ {
		switch f[j] {
		case "-r", "--real-server":
			if j+1 >= len(f) {
				return Real{}, &ParseError{n, col(line, f[j]), "-r needs an address"}
			}
			j++
			ap, err := netip.ParseAddrPort(f[j])
			if err != nil {
				return Real{}, &ParseError{n, col(line, f[j]), fmt.Sprintf("%q: want ADDRESS:PORT, numeric (ipvsadm-save -n)", f[j])}
			}
			r.Addr = ap
		case "-m", "-g", "-i":
			r.Forward = saveForward[f[j]]
		case "-w", "--weight":
			if j+1 >= len(f) {
				return Real{}, &ParseError{n, col(line, f[j]), "-w needs a weight"}
			}
			j++
			w, err := strconv.Atoi(f[j])
			if err != nil || w < 0 {
				return Real{}, &ParseError{n, col(line, f[j]), fmt.Sprintf("weight %q: want a number", f[j])}
			}
			r.Weight = w
		case "-x", "-y", "--u-threshold", "--l-threshold":
			j++ // connection thresholds: no bearing on which server is chosen while under them
		}
	}
	if !r.Addr.IsValid() {
		return Real{}, &ParseError{n, 1, "a real server without -r ADDRESS:PORT"}
	}
	return r, nil
}
