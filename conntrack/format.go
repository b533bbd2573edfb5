package conntrack

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Address families as Entry.Family spells them.
const (
	IPv4 = "IPv4"
	IPv6 = "IPv6"
)

// knownProto returns the name conntrack and the kernel give protocol n.
func knownProto(n uint8) (string, bool) {
	switch n {
	case 1:
		return "icmp", true
	case 6:
		return "tcp", true
	case 17:
		return "udp", true
	case 33:
		return "dccp", true
	case 47:
		return "gre", true
	case 58:
		return "icmpv6", true
	case 132:
		return "sctp", true
	case 136:
		return "udplite", true
	}
	return "", false
}

// protoName returns the name Entry.Protocol uses for protocol number n: the
// known name, or the number.
func protoName(n uint8) string {
	if s, ok := knownProto(n); ok {
		return s
	}
	return strconv.Itoa(int(n))
}

// protoNumber maps a protocol name or decimal number to its number.
func protoNumber(s string) (uint8, bool) {
	for _, n := range [...]uint8{1, 6, 17, 33, 47, 58, 132, 136} {
		if name, _ := knownProto(n); strings.EqualFold(name, s) {
			return n, true
		}
	}
	n, err := strconv.ParseUint(s, 10, 8)
	return uint8(n), err == nil
}

// hasPorts reports whether protocol n has source and destination ports.
func hasPorts(n uint8) bool {
	switch n {
	case 6, 17, 33, 132, 136:
		return true
	}
	return false
}

func isICMP(n uint8) bool { return n == 1 || n == 58 }

// stateTable returns the state names of protocol n by number, as the kernel
// and conntrack print them, or nil if n has no states.
func stateTable(n uint8) []string {
	switch n {
	case 6:
		return []string{"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
			"CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2"}
	case 132:
		return []string{"NONE", "CLOSED", "COOKIE_WAIT", "COOKIE_ECHOED", "ESTABLISHED",
			"SHUTDOWN_SENT", "SHUTDOWN_RECD", "SHUTDOWN_ACK_SENT", "HEARTBEAT_SENT", "HEARTBEAT_ACKED"}
	case 33:
		return []string{"NONE", "REQUEST", "RESPOND", "PARTOPEN", "OPEN", "CLOSEREQ",
			"CLOSING", "TIMEWAIT", "IGNORE", "INVALID"}
	}
	return nil
}

// stateName returns the name of state s of protocol n.
func stateName(n, s uint8) string {
	if t := stateTable(n); int(s) < len(t) {
		return t[s]
	}
	return strconv.Itoa(int(s))
}

// stateNumber returns the number of state name s of protocol n.
func stateNumber(n uint8, s string) (uint8, bool) {
	for i, name := range stateTable(n) {
		if name == s {
			return uint8(i), true
		}
	}
	if n == 6 && s == "LISTEN" { // older name of SYN_SENT2
		return 9, true
	}
	v, err := strconv.ParseUint(s, 10, 8)
	return uint8(v), err == nil
}

// icmpReplyType returns the type the kernel expects in the reply direction
// of an icmp (v6 false) or icmpv6 flow whose original type is t.
func icmpReplyType(t uint8, v6 bool) uint8 {
	pairs := [][2]uint8{{8, 0}, {13, 14}, {15, 16}, {17, 18}}
	if v6 {
		pairs = [][2]uint8{{128, 129}, {139, 140}}
	}
	for _, p := range pairs {
		switch t {
		case p[0]:
			return p[1]
		case p[1]:
			return p[0]
		}
	}
	return t
}

// familyOf returns IPv4 or IPv6 for a, "" if a is not valid.
func familyOf(a netip.Addr) string {
	switch {
	case a.Is4():
		return IPv4
	case a.Is6():
		return IPv6
	}
	return ""
}

// Format formats e the way `conntrack -L -o extended` prints an entry (with
// id= when e.ID is set, as -o id adds it), so that ParseText reads it back
// to the same Entry apart from Line. The kernel's reference count is not
// kept in Entry; Format writes use=1. Offload flags, labels, secctx and
// timestamps are not kept either.
func Format(e Entry) string {
	var b strings.Builder
	b.Grow(256)
	fam := e.Family
	if fam == "" {
		fam = familyOf(e.Orig.Src)
	}
	if fam == IPv6 {
		b.WriteString("ipv6     10 ")
	} else {
		b.WriteString("ipv4     2 ")
	}
	num, ok := protoNumber(e.Protocol)
	name := "unknown"
	if s, known := knownProto(num); ok && known {
		name = s
	}
	fmt.Fprintf(&b, "%-8s %d %d ", name, num, e.Timeout)
	if e.State != "" {
		b.WriteString(e.State)
		b.WriteByte(' ')
	}
	writeTuple(&b, e.Orig, num, e.ICMP, false)
	if e.Accounting {
		fmt.Fprintf(&b, "packets=%d bytes=%d ", e.OrigPackets, e.OrigBytes)
	}
	if e.Unreplied {
		b.WriteString("[UNREPLIED] ")
	}
	writeTuple(&b, e.Reply, num, e.ICMP, true)
	if e.Accounting {
		fmt.Fprintf(&b, "packets=%d bytes=%d ", e.ReplyPackets, e.ReplyBytes)
	}
	if e.Assured {
		b.WriteString("[ASSURED] ")
	}
	fmt.Fprintf(&b, "mark=%d ", e.Mark)
	if e.Zone != 0 {
		fmt.Fprintf(&b, "zone=%d ", e.Zone)
	}
	b.WriteString("use=1")
	if e.ID != 0 {
		fmt.Fprintf(&b, " id=%d", e.ID)
	}
	return b.String()
}

func writeTuple(b *strings.Builder, t Tuple, proto uint8, icmp ICMP, reply bool) {
	fmt.Fprintf(b, "src=%s dst=%s ", t.Src, t.Dst)
	switch {
	case hasPorts(proto):
		fmt.Fprintf(b, "sport=%d dport=%d ", t.SrcPort, t.DstPort)
	case isICMP(proto):
		typ := icmp.Type
		if reply {
			typ = icmpReplyType(typ, proto == 58)
		}
		fmt.Fprintf(b, "type=%d code=%d id=%d ", typ, icmp.Code, icmp.ID)
	}
}
