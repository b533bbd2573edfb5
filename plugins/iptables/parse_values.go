package iptables

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// checkValue reads the argument of a known option whose value the walk
// depends on, so that an unreadable value is a parse error pointing at it
// instead of a rule that silently never matches. owner is the match module
// (flag -m) or target (flag -j); opt is the canonical option name.
func (rp *ruleParser) checkValue(flag, owner, opt string, args []lexToken) error {
	if len(args) == 0 {
		return nil
	}
	a := args[0]
	msg := valueProblem(owner, opt, a.text)
	if msg == "" {
		return nil
	}
	return rp.errAt(a.col, "bad value %q for --%s of %s %s: %s", a.text, opt, flag, owner, msg)
}

// valueProblem says what is wrong with the argument v of option opt of a
// match module or target, or "" when it reads (or is not checked).
func valueProblem(owner, opt, v string) string {
	switch owner {
	case "statistic":
		return statisticProblem(opt, v)
	case "tcp", "udp", "udplite", "sctp":
		if opt == "dport" || opt == "sport" {
			return portSpecProblem(v, ':')
		}
	case "multiport":
		return portListProblem(v)
	case "mark", "connmark":
		if opt == "mark" {
			return markProblem(v)
		}
	case "MARK":
		return markProblem(v)
	case "recent":
		if opt == "seconds" || opt == "hitcount" {
			return uintProblem(v, math.MaxUint32)
		}
	case "DNAT", "SNAT":
		return natToProblem(v)
	case "MASQUERADE", "REDIRECT":
		if opt == "to-ports" {
			return portSpecProblem(v, '-')
		}
	}
	return ""
}

func statisticProblem(opt, v string) string {
	switch opt {
	case "mode":
		if v != "random" && v != "nth" {
			return "want random or nth"
		}
	case "probability":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return "want a probability from 0 to 1"
		}
	case "every":
		if n, err := strconv.ParseUint(v, 10, 32); err != nil || n == 0 {
			return "want a whole number from 1 to 4294967295"
		}
	case "packet":
		return uintProblem(v, math.MaxUint32)
	}
	return ""
}

func uintProblem(v string, limit uint64) string {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > limit {
		return fmt.Sprintf("want a whole number from 0 to %d", limit)
	}
	return ""
}

// portSpecProblem checks a port or a range of ports, its bounds joined by
// sep (':' in matches, '-' in NAT targets); a bound may be left out in a
// match range (":1024", "1024:").
func portSpecProblem(v string, sep byte) string {
	lo, hi, found := strings.Cut(v, string(sep))
	if !found {
		return portProblem(lo)
	}
	if sep == ':' && lo == "" {
		lo = "0"
	}
	if sep == ':' && hi == "" {
		hi = "65535"
	}
	if p := portProblem(lo); p != "" {
		return p
	}
	if p := portProblem(hi); p != "" {
		return p
	}
	l, _ := strconv.ParseUint(lo, 10, 16)
	h, _ := strconv.ParseUint(hi, 10, 16)
	if l > h {
		return fmt.Sprintf("port range %s runs backwards", v)
	}
	return ""
}

func portProblem(p string) string {
	if !lexDigits(p) {
		return fmt.Sprintf("port %q is not a number from 0 to 65535", p)
	}
	if _, err := strconv.ParseUint(p, 10, 16); err != nil {
		return fmt.Sprintf("port %s is not from 0 to 65535", p)
	}
	return ""
}

func portListProblem(v string) string {
	for _, p := range strings.Split(v, ",") {
		if msg := portSpecProblem(p, ':'); msg != "" {
			return msg
		}
	}
	return ""
}

func markProblem(v string) string {
	if _, _, ok := parseMark(v); !ok {
		return "want a mark VALUE or VALUE/MASK (numbers up to 0xffffffff)"
	}
	return ""
}

// natToProblem checks the --to-destination / --to-source of DNAT and
// SNAT: [ADDR[-ADDR]][:PORT[-PORT]], an IPv6 address in brackets when a
// port follows.
func natToProblem(v string) string {
	addrs, ports := v, ""
	switch {
	case strings.HasPrefix(v, "["):
		end := strings.LastIndexByte(v, ']')
		if end < 0 {
			return "an IPv6 address opened with [ is not closed with ]"
		}
		addrs, ports = strings.NewReplacer("[", "", "]", "").Replace(v[:end+1]), v[end+1:]
		if ports != "" && ports[0] != ':' {
			return fmt.Sprintf("unexpected %q after the address", ports)
		}
	case strings.Count(v, ":") == 1:
		i := strings.IndexByte(v, ':')
		addrs, ports = v[:i], v[i:]
	}
	if ports != "" {
		spec, _, _ := strings.Cut(ports[1:], "/") // PORT-PORT/BASE
		if p := portSpecProblem(spec, '-'); p != "" {
			return p
		}
	}
	if addrs == "" {
		if ports == "" {
			return "want an address, a port or both"
		}
		return ""
	}
	lo, hi, isRange := strings.Cut(addrs, "-")
	for _, s := range []string{lo, hi} {
		if !isRange && s == hi {
			continue
		}
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
			return fmt.Sprintf("%q is not an IP address", s)
		}
	}
	return ""
}
