package iptables

import (
	"net/netip"
	"strings"
)

// iface is -i/-o for the in or out column ("*" or "any": none).
func (l *listing) iface(s, flag string) []string {
	switch s {
	case "", "*":
		return nil
	case "any":
		l.names = true
		return nil
	}
	if name, ok := strings.CutPrefix(s, "!"); ok {
		return []string{"!", flag, name}
	}
	return []string{flag, s}
}

// listingHosts are the names iptables -L without -n prints for addresses
// every system names the same (/etc/hosts, /etc/networks, the multicast
// base's reverse name).
func listingHost(name string) (string, bool) {
	switch name {
	case "localhost":
		return "127.0.0.1", true
	case "loopback":
		return "127.0.0.0", true
	case "base-address.mcast.net":
		return "224.0.0.0", true
	case "link-local":
		return "169.254.0.0", true
	case "ip6-localhost", "ip6-loopback":
		return "::1", true
	}
	return "", false
}

// addr is -s/-d for a source or destination column.
func (l *listing) addr(s, flag string, n int) []string {
	neg := strings.HasPrefix(s, "!")
	a := strings.TrimPrefix(s, "!")
	if a == "anywhere" {
		l.names = true
		return nil
	}
	if a == "0.0.0.0/0" || a == "::/0" {
		if a == "::/0" && l.v6 == 0 {
			l.v6 = n
		}
		return nil
	}
	host, bits, hasBits := strings.Cut(a, "/")
	if _, err := netip.ParseAddr(host); err != nil {
		l.names = true
		ip, ok := listingHost(host)
		if !ok {
			what := map[string]string{"-s": "source", "-d": "destination"}[flag]
			l.note(n, "the %s %q is a name the listing printed for an address (taken without -n): its address is not known, so the rule is kept with it unread and taken as not matching; %s",
				what, s, listingHint)
			return []string{"-m", "listing-unread", "--text", listingQuote(what + " " + s)}
		}
		l.note(n, "the name %q read as %s, the address every system gives it", host, ip)
		host = ip
	}
	out := host
	if hasBits {
		out += "/" + bits
	}
	if neg {
		return []string{"!", flag, out}
	}
	return []string{flag, out}
}

// listingQuote quotes s as iptables-save does an argument with blanks.
func listingQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
