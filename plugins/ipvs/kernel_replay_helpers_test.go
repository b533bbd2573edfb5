package ipvs

import (
	"regexp"
	"strings"
)

// recordDir holds the recordings the replay tests play back.
const recordDir = "testdata/kernel"

// addrFlags are the flags ip -o addr show prints after an IPv6
// address's scope (IFA_F_*), which the reader's listing leaves out: it
// prints what kube-proxy binds, not the state of duplicate address
// detection.
var addrFlags = regexp.MustCompile(`(?m)^(\d+: \S+ +inet6 \S+ scope \S+)((?: (?:nodad|tentative|dadfailed|deprecated|optimistic|noprefixroute|home|mngtmpaddr))+) \\`)

// withoutAddrFlags is ip -o addr show's output without those flags.
func withoutAddrFlags(ip string) string {
	return addrFlags.ReplaceAllString(ip, `$1 \`)
}

// ipvsadmText is ipvsadm -Ln's output without the blanks it pads the
// last column of a real server's line with, which the reader's listing
// does not print (the e2e tests even them out too).
func ipvsadmText(out string) string {
	lines := strings.SplitAfter(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimSuffix(l, "\n"), " ") + l[len(strings.TrimSuffix(l, "\n")):]
	}
	return strings.Join(lines, "")
}

// containsAddr says whether ip -o addr show's output binds the prefix.
func containsAddr(ip, prefix string) bool {
	for _, l := range strings.Split(ip, "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[3] == prefix {
			return true
		}
	}
	return false
}
