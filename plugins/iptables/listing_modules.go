package iptables

import (
	"strconv"
	"strings"
)

// The printouts of the match modules and targets kube-proxy and its
// neighbours use, as iptables -L prints them, read back into options.

// multiport reads "multiport dports [!]80,443:445".
func (ex *extrasScan) multiport() bool {
	kind, _ := ex.next()
	if kind != "dports" && kind != "sports" && kind != "ports" {
		return false
	}
	list, _ := ex.next()
	neg := strings.HasPrefix(list, "!")
	if neg {
		list = list[1:]
	} else if list == "!" {
		neg = true
		list, _ = ex.next()
	}
	parts := strings.Split(list, ",")
	for i, p := range parts {
		v, ok := ex.portRange(p)
		if !ok || p == "" {
			return false
		}
		parts[i] = v
	}
	args := []string{"-m", "multiport"}
	if neg {
		args = append(args, "!")
	}
	ex.match(append(args, "--"+kind, strings.Join(parts, ","))...)
	return true
}

// statistic reads "statistic mode random probability P" and "statistic
// mode nth every N packet P".
func (ex *extrasScan) statistic() bool {
	if w, _ := ex.next(); w != "mode" {
		return false
	}
	mode, _ := ex.next()
	args := []string{"-m", "statistic", "--mode", mode}
	switch mode {
	case "random":
		w, _ := ex.next()
		neg := w == "!"
		if neg {
			w, _ = ex.next()
		}
		p, _ := ex.next()
		if w != "probability" {
			return false
		}
		if _, err := strconv.ParseFloat(p, 64); err != nil {
			return false
		}
		if neg {
			args = append(args, "!")
		}
		args = append(args, "--probability", p)
	case "nth":
		e, _ := ex.next()
		every, _ := ex.next()
		pk, _ := ex.next()
		packet, _ := ex.next()
		if e != "every" || pk != "packet" || !lexDigits(every) || !lexDigits(packet) {
			return false
		}
		args = append(args, "--every", every, "--packet", packet)
	default:
		return false
	}
	ex.match(args...)
	return true
}

// mark reads "mark match [!] V[/M]".
func (ex *extrasScan) mark() bool {
	if w, _ := ex.next(); w != "match" {
		return false
	}
	v, _ := ex.next()
	args := []string{"-m", "mark"}
	if v == "!" {
		args = append(args, "!")
		v, _ = ex.next()
	} else if strings.HasPrefix(v, "!") { // older iptables: "!0x4000"
		args = append(args, "!")
		v = v[1:]
	}
	if !strings.HasPrefix(v, "0x") {
		return false
	}
	ex.match(append(args, "--mark", v)...)
	return true
}

// markTarget reads MARK's "set V", "xset V/M", "or V", "and V", "xor V"
// into --set-xmark as iptables-save writes them.
func (ex *extrasScan) markTarget() bool {
	op, _ := ex.next()
	v, _ := ex.next()
	if ex.target != "MARK" || !strings.HasPrefix(v, "0x") {
		return false
	}
	n, err := strconv.ParseUint(strings.Split(v, "/")[0][2:], 16, 32)
	if err != nil {
		return false
	}
	var x string
	switch op {
	case "set":
		x = v + "/0xffffffff"
	case "xset":
		x = v
		if !strings.Contains(v, "/") {
			x += "/0xffffffff"
		}
	case "or":
		x = v + "/" + v
	case "and":
		x = "0x0/0x" + strconv.FormatUint(^n&0xffffffff, 16)
	case "xor":
		x = v + "/0x0"
	default:
		return false
	}
	ex.topt("--set-xmark", x)
	return true
}

// addrtype reads "ADDRTYPE match src-type [!]T dst-type [!]T limit-in".
func (ex *extrasScan) addrtype() bool {
	if w, _ := ex.next(); w != "match" {
		return false
	}
	args := []string{"-m", "addrtype"}
	for {
		save := ex.i
		w, _ := ex.next()
		switch w {
		case "src-type", "dst-type":
			t, _ := ex.next()
			if t == "" {
				return false
			}
			if neg := strings.HasPrefix(t, "!"); neg {
				args = append(args, "!")
				t = t[1:]
			}
			args = append(args, "--"+w, t)
		case "limit-in":
			args = append(args, "--limit-iface-in")
		case "limit-out":
			args = append(args, "--limit-iface-out")
		default:
			ex.i = save
			ex.match(args...)
			return len(args) > 2
		}
	}
}

// recent reads "recent: [!] CHECK seconds: N reap hit_count: N TTL-Match
// name: X side: source mask: M".
func (ex *extrasScan) recent() bool {
	args := []string{"-m", "recent"}
	neg, side := false, ""
	for {
		save := ex.i
		w, _ := ex.next()
		val := func() string { v, _ := ex.next(); return v }
		switch w {
		case "!":
			neg = true
			continue
		case "CHECK", "SET", "UPDATE", "REMOVE":
			if neg {
				args = append(args, "!")
			}
			args = append(args, "--"+map[string]string{"CHECK": "rcheck", "SET": "set", "UPDATE": "update", "REMOVE": "remove"}[w])
		case "seconds:":
			args = append(args, "--seconds", val())
		case "hit_count:":
			args = append(args, "--hitcount", val())
		case "reap":
			args = append(args, "--reap")
		case "TTL-Match":
			args = append(args, "--rttl")
		case "name:":
			args = append(args, "--name", val())
		case "mask:":
			args = append(args, "--mask", val())
		case "side:":
			switch val() {
			case "source":
				side = "--rsource"
			case "dest":
				side = "--rdest"
			default:
				return false
			}
		default:
			ex.i = save
			if side != "" {
				args = append(args, side) // iptables-save writes it last
			}
			ex.match(args...)
			return len(args) > 2
		}
		neg = false
	}
}

// conntrack reads consecutive conntrack printouts ("! ctstate
// RELATED,ESTABLISHED ctorigdstport 80") into one -m conntrack.
func (ex *extrasScan) conntrack(w string, neg bool) bool {
	args := []string{"-m", "conntrack"}
	for {
		v, _ := ex.next()
		if v == "" {
			return false
		}
		if neg {
			args = append(args, "!")
		}
		args = append(args, "--"+w, v)
		save := ex.i
		w, _ = ex.next()
		neg = w == "!"
		if neg {
			w, _ = ex.next()
		}
		if !strings.HasPrefix(w, "ct") || w == "ct" {
			ex.i = save
			ex.match(args...)
			return true
		}
	}
}
