package reconcile

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The checks of one type each: what is wrong with a value ("" when
// nothing is), for refusal's message.

// maxIfaceName is the longest interface name the kernel takes (IFNAMSIZ,
// 16, less its terminating NUL).
const maxIfaceName = 15

// checkAddr says what is wrong with an IP address ("" when nothing is):
// one netip reads, with no zone, of the family when one is given.
func checkAddr(s, family string) string {
	a, err := netip.ParseAddr(s)
	if err != nil && strings.Contains(s, "%") {
		return "is not an IP address: an address with a zone (%) is none a rule holds"
	}
	if err != nil {
		return "is not an IP address"
	}
	if a.Zone() != "" {
		return "is an address with a zone, which no rule holds"
	}
	return checkFamily(a, family)
}

// checkPrefix says what is wrong with a CIDR ("" when nothing is).
func checkPrefix(s, family string) string {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return "is not a CIDR"
	}
	return checkFamily(p.Addr(), family)
}

func checkFamily(a netip.Addr, family string) string {
	switch {
	case family == "IPv4" && !a.Is4():
		return "is not an IPv4 address"
	case family == "IPv6" && (!a.Is6() || a.Is4In6()):
		return "is not an IPv6 address"
	}
	return ""
}

// checkPort says what is wrong with a port number; zero is allowed where
// it means none (a NodePort's).
func checkPort(p int32, zeroIsNone bool) string {
	if p == 0 && zeroIsNone {
		return ""
	}
	if p < 1 || p > 65535 {
		return "is not a port (1 to 65535)"
	}
	return ""
}

// checkName says what is wrong with a namespace, Service or port name:
// the API holds each to a DNS-1123 label, which has nothing a rule's
// comment or an nft string could not hold.
func checkName(s string) string {
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return "is not a DNS-1123 label (" + strings.Join(errs, "; ") + ")"
	}
	return ""
}

// checkIfaceName says what is wrong with an interface name (or the prefix
// of one) by the kernel's rules (dev_valid_name: 1 to 15 bytes, not "."
// or "..", no '/', ':' or white space), and by what the tools can take
// in a rule: printable ASCII only, no quote or backslash, no wildcard
// ('+', '*'), no leading '-' or '!'.
func checkIfaceName(s string, max int) string {
	switch {
	case s == "":
		return "is not an interface name: it is empty"
	case len(s) > max:
		return fmt.Sprintf("is not an interface name: longer than %d bytes", max)
	case s == "." || s == "..":
		return "is not an interface name"
	case s[0] == '-' || s[0] == '!':
		return fmt.Sprintf("is not an interface name a rule can hold: it starts with %q", s[0])
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= ' ' || c >= 0x7f:
			return "is not an interface name: it holds a space, a control character or a byte outside ASCII"
		case c == '/' || c == ':':
			return fmt.Sprintf("is not an interface name: it holds %q", c)
		case c == '"' || c == '\'' || c == '\\' || c == '+' || c == '*':
			return fmt.Sprintf("is not an interface name a rule can hold: it holds %q", c)
		}
	}
	return ""
}
