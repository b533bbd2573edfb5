package iptables

import (
	"slices"
	"strconv"
	"strings"
)

// dashed reads a printout made of the module's own options ("PHYSDEV
// match --physdev-is-in ! --physdev-out eth0", "socket --transparent").
func (ex *extrasScan) dashed(module string) bool {
	args := []string{"-m", module}
	if module == "physdev" {
		if w, _ := ex.next(); w != "match" {
			return false
		}
	}
	for {
		save := ex.i
		w, _ := ex.next()
		if w == "!" && strings.HasPrefix(ex.peek(0), "--") {
			args = append(args, w)
			continue
		}
		if !strings.HasPrefix(w, "--") {
			ex.i = save
			ex.match(args...)
			return true
		}
		args = append(args, w)
		if w == "--physdev-in" || w == "--physdev-out" {
			v, _ := ex.next()
			args = append(args, v)
		}
	}
}

// limit reads "limit: avg R burst B".
func (ex *extrasScan) limit() bool {
	a, _ := ex.next()
	r, _ := ex.next()
	b, _ := ex.next()
	n, _ := ex.next()
	if a != "avg" || b != "burst" || !lexDigits(n) {
		return false
	}
	args := []string{"-m", "limit", "--limit", r}
	if n != "5" { // iptables-save leaves out the default burst
		args = append(args, "--limit-burst", n)
	}
	ex.match(args...)
	return true
}

// log reads LOG's "flags N level L prefix "P"" (without -n the level is a
// name: "level warn"); only the prefix and level are kept, as
// iptables-save writes them (the default level 4 left out).
func (ex *extrasScan) log() bool {
	var prefix, level []string
	for {
		save := ex.i
		w, _ := ex.next()
		switch w {
		case "flags":
			ex.next()
		case "level":
			v, _ := ex.next()
			if i := slices.Index([]string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}, v); i >= 0 {
				v = strconv.Itoa(i)
			}
			if v != "4" {
				level = []string{"--log-level", v}
			}
		case "prefix":
			rest := strings.TrimSpace(ex.s[ex.i:])
			end := strings.LastIndexByte(rest, '"')
			if !strings.HasPrefix(rest, `"`) || end < 1 {
				return false
			}
			prefix = []string{"--log-prefix", listingQuote(rest[1:end])}
			ex.i = len(ex.s) - len(rest) + end + 1
		default:
			ex.i = save
			ex.topt(append(prefix, level...)...)
			return true
		}
	}
}
