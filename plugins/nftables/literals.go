package nftables

import (
	"net/netip"
	"strconv"
	"strings"
)

// Literals as nft writes them: addresses, numbers and the names it prints
// for some numbers.

func litAddr(e Expr) (netip.Addr, bool) {
	lit, ok := e.(*Literal)
	if !ok {
		return netip.Addr{}, false
	}
	if lit.known {
		// Read when parsed (literalValue).
		return lit.val.addr, lit.val.kind == vAddr
	}
	t := lit.Text
	if strings.Contains(t, "/") {
		// A prefix of one address is the address.
		p, err := netip.ParsePrefix(t)
		return p.Addr(), err == nil && p.Bits() == p.Addr().BitLen()
	}
	a, err := netip.ParseAddr(t)
	return a, err == nil
}

// ifnameMatch compares an interface name with a pattern ("eth*").
func ifnameMatch(name, pat string) bool {
	if strings.HasSuffix(pat, "\\*") {
		return name == strings.TrimSuffix(pat, "\\*")+"*"
	}
	if strings.HasSuffix(pat, "*") {
		return strings.HasPrefix(name, strings.TrimSuffix(pat, "*"))
	}
	return name == pat
}

// litInt reads a number or a name nft prints for one (protocols, a few
// service names, families).
func litInt(s string) (uint64, bool) {
	if n, ok := protoNum(s); ok {
		return n, true
	}
	switch s {
	case "ipv4":
		return 2, true
	case "ipv6":
		return 10, true
	case "http":
		return 80, true
	case "https":
		return 443, true
	case "domain":
		return 53, true
	}
	n, err := strconv.ParseUint(s, 0, 64)
	return n, err == nil
}

func protoNum(s string) (uint64, bool) {
	switch strings.ToLower(s) {
	case "icmp":
		return 1, true
	case "tcp":
		return 6, true
	case "udp":
		return 17, true
	case "dccp":
		return 33, true
	case "gre":
		return 47, true
	case "esp":
		return 50, true
	case "ah":
		return 51, true
	case "icmpv6", "ipv6-icmp":
		return 58, true
	case "sctp":
		return 132, true
	case "udplite":
		return 136, true
	}
	return 0, false
}

func protoName(n uint64) string {
	switch n {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	case 1:
		return "icmp"
	case 58:
		return "icmpv6"
	}
	return strconv.FormatUint(n, 10)
}

// dataValue reads a map element's data (an address, "addr . port").
// literalValue reads a literal: an address, a number, or a string.
func literalValue(x *Literal) value {
	if a, ok := litAddr(x); ok {
		return value{kind: vAddr, addr: a}
	}
	if n, ok := litInt(x.Text); ok {
		return value{kind: vInt, n: n}
	}
	return value{kind: vStr, s: x.Text}
}

func dataValue(e Expr) value {
	switch x := e.(type) {
	case *Literal:
		if x.known {
			return x.val
		}
		return literalValue(x)
	case *Concat:
		v := value{kind: vConcat, parts: make([]value, 0, len(x.Parts))}
		for _, p := range x.Parts {
			v.parts = append(v.parts, dataValue(p))
		}
		return v
	}
	return unknownValue("map data " + e.String() + " is not a value")
}
