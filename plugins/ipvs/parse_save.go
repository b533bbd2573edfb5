package ipvs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

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
		if proto != "FWM" && redacted(f[2]) {
			if f[0] == "-A" {
				t.Notes = append(t.Notes, redactedVirtual(proto, f[2], n))
				t.hidden++
			}
			continue
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
		if r.Redacted {
			t.Notes = append(t.Notes, redactedReal(v, fieldAfter(f, "-r"), n))
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
			r.Redacted = err != nil && redacted(f[j])
			if err != nil && !r.Redacted {
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
	if !r.Addr.IsValid() && !r.Redacted {
		return Real{}, &ParseError{n, 1, "a real server without -r ADDRESS:PORT"}
	}
	return r, nil
}

// fieldAfter is the field after opt in f ("" when none).
func fieldAfter(f []string, opt string) string {
	for i := 0; i+1 < len(f); i++ {
		if f[i] == opt {
			return f[i+1]
		}
	}
	return ""
}
