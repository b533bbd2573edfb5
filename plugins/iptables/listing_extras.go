package iptables

import (
	"slices"
	"strconv"
	"strings"
)

// listingExtras is what a rule line prints after its destination, as
// iptables-save options: the matches and the target's options.
type listingExtras struct {
	matches    []string
	targetOpts []string
	goTo       bool
}

// extrasScan reads the words after the destination column.
type extrasScan struct {
	listingScan
	l      *listing
	n      int
	target string
	out    listingExtras
}

// extras translates the printouts of a rule's matches and target.
// Whatever is not understood is kept, from the first word not understood
// to the end of the line, as an unread match (its rule taken as not
// matching) and said in a note.
func (l *listing) extras(rest, target string, n int) listingExtras {
	ex := &extrasScan{listingScan: listingScan{s: rest}, l: l, n: n, target: target}
	for {
		i := lexSkipBlank(ex.s, ex.i)
		if i == len(ex.s) {
			break
		}
		ex.i = i
		if strings.HasPrefix(ex.s[i:], "/*") {
			ex.comment()
			continue
		}
		save := ex.i
		if !ex.word() {
			ex.unread(save)
			break
		}
	}
	return ex.out
}

func (ex *extrasScan) match(args ...string) { ex.out.matches = append(ex.out.matches, args...) }

func (ex *extrasScan) topt(args ...string) { ex.out.targetOpts = append(ex.out.targetOpts, args...) }

// comment reads "/* text */" up to the line's last "*/" (a comment may
// hold "*/"; no other printout does).
func (ex *extrasScan) comment() {
	body := ex.s[ex.i+2:]
	end := strings.LastIndex(body, "*/")
	if end < 0 {
		ex.l.note(ex.n, "a comment without its closing */ (the line is cut?): read up to the line's end")
		end = len(body)
		ex.i = len(ex.s)
	} else {
		ex.i += 2 + end + 2
	}
	text := strings.TrimSuffix(strings.TrimPrefix(body[:end], " "), " ")
	ex.match("-m", "comment", "--comment", listingQuote(text))
}

// unread keeps the rest of the line from offset from.
func (ex *extrasScan) unread(from int) {
	text := strings.TrimSpace(ex.s[from:])
	ex.l.note(ex.n, "%q is not understood: kept unread, and the rule is taken as not matching; %s", text, listingHint)
	ex.match("-m", "listing-unread", "--text", listingQuote(text))
	ex.i = len(ex.s)
}

// word reads one printout; false when it is not understood (nothing is
// then taken).
func (ex *extrasScan) word() bool {
	save, out := ex.i, ex.out
	w, _ := ex.next()
	neg := w == "!"
	if neg {
		w, _ = ex.next()
	}
	ok := ex.printout(w, neg)
	if !ok { // what a printout took before failing is given back
		ex.i = save
		ex.out = listingExtras{matches: out.matches[:len(out.matches):len(out.matches)],
			targetOpts: out.targetOpts[:len(out.targetOpts):len(out.targetOpts)], goTo: out.goTo}
	}
	return ok
}

func (ex *extrasScan) printout(w string, neg bool) bool {
	bang := func(opt string, args ...string) []string {
		if neg {
			return append([]string{"!", opt}, args...)
		}
		return append([]string{opt}, args...)
	}
	switch w {
	case "tcp", "udp", "sctp", "dccp", "udplite":
		return !neg && ex.ports(w)
	case "multiport":
		return !neg && ex.multiport()
	case "statistic":
		return !neg && ex.statistic()
	case "mark":
		return !neg && ex.mark()
	case "MARK":
		return !neg && ex.markTarget()
	case "ADDRTYPE":
		return !neg && ex.addrtype()
	case "recent:":
		return !neg && ex.recent()
	case "ctstate", "ctproto", "ctorigsrc", "ctorigdst", "ctreplsrc", "ctrepldst", "ctorigsrcport",
		"ctorigdstport", "ctreplsrcport", "ctrepldstport", "ctstatus", "ctexpire":
		return ex.conntrack(w, neg)
	case "state":
		v, _ := ex.next()
		ex.match(append([]string{"-m", "state"}, bang("--state", v)...)...)
		return v != ""
	case "match-set":
		name, _ := ex.next()
		flags, _ := ex.next()
		ex.match(append([]string{"-m", "set"}, bang("--match-set", name, flags)...)...)
		return flags != ""
	case "reject-with":
		v, _ := ex.next()
		ex.topt("--reject-with", v)
		return !neg && v != "" && ex.target == "REJECT"
	case "[goto]":
		ex.out.goTo = true
		return !neg
	case "PHYSDEV", "socket":
		return !neg && ex.dashed(strings.ToLower(w))
	case "nfacct-name":
		v, _ := ex.next()
		ex.match("-m", "nfacct", "--nfacct-name", v)
		return !neg && v != ""
	case "limit:":
		return !neg && ex.limit()
	case "LOG":
		return !neg && ex.target == "LOG" && ex.log()
	case "icmptype", "icmp":
		v, _ := ex.next()
		if n := listingICMP(v); n != "" {
			v = n
		}
		ex.match("-m", "icmp", "--icmp-type", v)
		return !neg && v != ""
	}
	return !neg && ex.targetWord(w)
}

// targetWord reads the printouts of the NAT targets.
func (ex *extrasScan) targetWord(w string) bool {
	nat := ex.target == "DNAT" || ex.target == "SNAT" || ex.target == "MASQUERADE" || ex.target == "REDIRECT"
	switch {
	case strings.HasPrefix(w, "to:") && (ex.target == "DNAT" || ex.target == "SNAT"):
		opt := "--to-destination"
		if ex.target == "SNAT" {
			opt = "--to-source"
		}
		ex.topt(opt, w[3:])
	case nat && (w == "random" || w == "persistent" || w == "random-fully"):
		ex.topt("--" + w)
	case w == "masq" && ex.target == "MASQUERADE", w == "redir" && ex.target == "REDIRECT":
		if k, _ := ex.next(); k != "ports:" && k != "ports" {
			return false
		}
		v, _ := ex.next()
		ex.topt("--to-ports", v)
	default:
		return false
	}
	return true
}

// ports reads "tcp spt:A dpts:B:C flags:X/Y" (each part optional).
func (ex *extrasScan) ports(proto string) bool {
	args := []string{"-m", proto}
	for {
		save := ex.i
		w, _ := ex.next()
		key, v, ok := strings.Cut(w, ":")
		if !ok {
			ex.i = save
			break
		}
		neg := strings.HasPrefix(v, "!")
		v = strings.TrimPrefix(v, "!")
		var opt []string
		switch key {
		case "spt", "spts", "dpt", "dpts":
			p, ok := ex.portRange(v)
			if !ok {
				ex.i = save
				return false
			}
			opt = []string{"--" + key[:1] + "port", p}
		case "flags":
			mask, comp, ok := listingTCPFlags(v)
			if !ok || proto != "tcp" {
				ex.i = save
				return false
			}
			opt = []string{"--tcp-flags", mask, comp}
		default:
			ex.i = save
			ex.match(args...)
			return true
		}
		if neg {
			args = append(args, "!")
		}
		args = append(args, opt...)
	}
	ex.match(args...)
	return true
}

// portRange reads a port or "a:b", as numbers or service names.
func (ex *extrasScan) portRange(v string) (string, bool) {
	parts := strings.Split(v, ":")
	for i, s := range parts {
		p, ok := listingPort(s)
		if !ok {
			return "", false
		}
		if p != s {
			ex.l.names = true
			ex.l.note(ex.n, "the port name %q read as %s (/etc/services)", s, p)
		}
		parts[i] = p
	}
	return strings.Join(parts, ":"), len(parts) <= 2
}

// listingICMP is an ICMP type name iptables -L prints without -n as the
// number iptables-save writes ("" for another).
func listingICMP(name string) string {
	i := slices.Index([]string{"echo-reply", "destination-unreachable", "network-unreachable", "host-unreachable",
		"protocol-unreachable", "port-unreachable", "fragmentation-needed", "source-quench", "redirect",
		"echo-request", "time-exceeded", "parameter-problem", "timestamp-request", "timestamp-reply"}, name)
	if i < 0 {
		return ""
	}
	return []string{"0", "3", "3/0", "3/1", "3/2", "3/3", "3/4", "4", "5", "8", "11", "12", "13", "14"}[i]
}

// listingTCPFlags reads flags:MASK/COMP, as names or numbers.
func listingTCPFlags(v string) (string, string, bool) {
	mask, comp, ok := strings.Cut(v, "/")
	if !ok {
		return "", "", false
	}
	m, ok1 := listingFlagNames(mask)
	c, ok2 := listingFlagNames(comp)
	return m, c, ok1 && ok2
}

func listingFlagNames(s string) (string, bool) {
	if !strings.HasPrefix(s, "0x") {
		return s, s != ""
	}
	v, err := strconv.ParseUint(s[2:], 16, 8)
	if err != nil {
		return "", false
	}
	if v == 0 {
		return "NONE", true
	}
	var names []string
	for i, name := range []string{"FIN", "SYN", "RST", "PSH", "ACK", "URG"} {
		if v&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, ","), v < 64
}
