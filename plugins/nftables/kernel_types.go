//go:build linux

package nftables

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// nft's data types by the number the kernel keeps for a set's key and
// data (nft's datatype.h); a concatenation packs its parts' numbers six
// bits each, the first part highest.
var typeNames = map[uint32]string{
	1: "verdict", 2: "nf_proto", 3: "bitmask", 4: "integer", 5: "string", 6: "lladdr",
	7: "ipv4_addr", 8: "ipv6_addr", 9: "ether_addr", 10: "ether_type", 11: "arp_op",
	12: "inet_proto", 13: "inet_service", 14: "icmp_type", 15: "tcp_flag", 16: "dccp_pkttype",
	17: "mh_type", 18: "time", 19: "mark", 20: "iface_index", 21: "iface_type", 22: "realm",
	23: "classid", 24: "uid", 25: "gid", 26: "ct_state", 27: "ct_dir", 28: "ct_status",
	29: "icmpv6_type", 30: "ct_label", 31: "pkt_type", 32: "icmp_code", 33: "icmpv6_code",
	34: "icmpx_code", 35: "devgroup", 36: "dscp", 37: "ecn", 38: "fib_addrtype", 39: "boolean",
	40: "ct_event", 41: "ifname", 42: "igmp_type", 43: "time", 44: "hour", 45: "day", 46: "cgroupsv2",
}

// dataVerdict is NFT_DATA_VERDICT, the data type of a verdict map.
const dataVerdict = 0xffffff00

// typeParts splits a set's key type into nft's names, first part first.
func typeParts(t uint32) ([]string, bool) {
	if t == dataVerdict {
		return []string{"verdict"}, true
	}
	var parts []string
	for t != 0 {
		n, ok := typeNames[t&0x3f]
		if !ok {
			return nil, false
		}
		parts = append([]string{n}, parts...)
		t >>= 6
	}
	return parts, len(parts) > 0
}

// typeSize is how many bytes a value of the type takes in a register
// (0: depends on the declaration).
func typeSize(name string) int {
	switch name {
	case "ipv4_addr", "mark", "integer", "ct_state", "ct_status", "iface_index", "realm", "classid",
		"uid", "gid", "devgroup", "fib_addrtype", "cgroupsv2", "ct_event", "hour", "day":
		return 4
	case "ipv6_addr", "ifname", "ct_label":
		return 16
	case "inet_service", "ether_type", "arp_op", "iface_type":
		return 2
	case "ether_addr", "lladdr":
		return 6
	case "inet_proto", "nf_proto", "icmp_type", "icmpv6_type", "icmp_code", "icmpv6_code",
		"icmpx_code", "tcp_flag", "pkt_type", "ct_dir", "dscp", "ecn", "boolean", "igmp_type",
		"dccp_pkttype", "mh_type":
		return 1
	case "time":
		return 8
	}
	return 0
}

// hostOrder: values nft keeps in the host's byte order.
func hostOrder(name string) bool {
	switch name {
	case "mark", "integer", "ct_state", "ct_status", "iface_index", "realm", "classid", "uid", "gid",
		"devgroup", "fib_addrtype", "cgroupsv2", "ct_event", "time", "hour", "day", "ct_dir", "nf_proto",
		"pkt_type", "boolean", "iface_type":
		return true
	}
	return false
}

// protoNames are the protocols nft prints by name.
var protoNames = map[uint64]string{1: "icmp", 2: "igmp", 4: "ipv4", 6: "tcp", 17: "udp", 33: "dccp", 41: "ipv6",
	47: "gre", 50: "esp", 51: "ah", 58: "ipv6-icmp", 132: "sctp", 136: "udplite", 0: "ip"}

var ctStateBits = []string{"invalid", "established", "related", "new", "untracked"}

var ctStatusBits = []string{"expected", "seen-reply", "assured", "confirmed", "snat", "dnat", "dying"}

var fibTypes = []string{"unspec", "unicast", "local", "broadcast", "anycast", "multicast", "blackhole",
	"unreachable", "prohibit", "throw", "nat", "xresolve"}

// kLits are the literals one read made, for the values that repeat
// (ports, protocols, small numbers: a node's hundred thousand map elements
// share a few of them): the walker only reads a literal, so one serves
// every place that holds its value. Addresses, mostly distinct, are not
// kept.
type kLits map[kLitKey]*Literal

type kLitKey struct {
	text string
	num  bool
}

func (l kLits) lit(text string, num bool) *Literal {
	k := kLitKey{text, num}
	if x := l[k]; x != nil {
		return x
	}
	x := newLiteral(text, num)
	l[k] = x
	return x
}

// kValue is a literal of a type, read from the bytes the kernel holds:
// nil when the bytes do not make one.
func (l kLits) kValue(b []byte, typ string) Expr {
	n := typeSize(typ)
	if typ == "ifname" && len(b) > 0 && len(b) < n && !slices.Contains(b, 0) {
		// A name compared on its first bytes only: nft's wildcard
		// ("veth*"), which kube-proxy's InterfaceNamePrefix detector
		// writes.
		return newLiteral(string(b)+"*", false)
	}
	if n != 0 && len(b) < n {
		return nil
	}
	switch typ {
	case "ipv4_addr":
		return newLiteral(netip.AddrFrom4([4]byte(b[:4])).String(), false)
	case "ipv6_addr":
		return newLiteral(netip.AddrFrom16([16]byte(b[:16])).String(), false)
	case "inet_service":
		return l.lit(strconv.Itoa(int(binary.BigEndian.Uint16(b))), true)
	case "inet_proto":
		if name, ok := protoNames[uint64(b[0])]; ok && b[0] != 0 {
			return l.lit(name, false)
		}
		return l.lit(strconv.Itoa(int(b[0])), true)
	case "nf_proto":
		if name, ok := map[byte]string{2: "ipv4", 10: "ipv6"}[b[0]]; ok {
			return l.lit(name, false)
		}
		return l.lit(strconv.Itoa(int(b[0])), true)
	case "ifname", "string":
		return newLiteral(cstring(b), false)
	case "ether_addr", "lladdr":
		parts := make([]string, len(b[:6]))
		for i, x := range b[:6] {
			parts[i] = fmt.Sprintf("%02x", x)
		}
		return newLiteral(strings.Join(parts, ":"), false)
	case "fib_addrtype":
		v := binary.NativeEndian.Uint32(b)
		if int(v) < len(fibTypes) {
			return l.lit(fibTypes[v], false)
		}
		return nil
	case "ct_state":
		return l.flagsLiteral(uint64(binary.NativeEndian.Uint32(b)), ctStateBits)
	case "ct_status":
		return l.flagsLiteral(uint64(binary.NativeEndian.Uint32(b)), ctStatusBits)
	case "mark", "integer":
		// (Interface indexes, users, realms and the like nft prints by
		// name: not translated.)
		return l.lit(strconv.FormatUint(uint64(binary.NativeEndian.Uint32(b)), 10), true)
	}
	return nil
}

// flagsLiteral is a flag value by name: one flag alone, several as a
// list, as nft prints them; nil when a bit has no name.
func (l kLits) flagsLiteral(v uint64, names []string) Expr {
	var items []Expr
	for i, n := range names {
		if v&(1<<i) != 0 {
			items = append(items, l.lit(n, false))
			v &^= 1 << i
		}
	}
	if v != 0 || len(items) == 0 {
		return nil
	}
	if len(items) == 1 {
		return items[0]
	}
	return &List{Items: items}
}

// kValueInt is an integer literal of a register's bytes, in the order
// the type keeps it.
func kValueInt(b []byte, typ string) (uint64, bool) {
	var v uint64
	switch len(b) {
	case 1:
		v = uint64(b[0])
	case 2:
		if hostOrder(typ) {
			v = uint64(binary.NativeEndian.Uint16(b))
		} else {
			v = uint64(binary.BigEndian.Uint16(b))
		}
	case 4:
		if hostOrder(typ) {
			v = uint64(binary.NativeEndian.Uint32(b))
		} else {
			v = uint64(binary.BigEndian.Uint32(b))
		}
	case 8:
		if hostOrder(typ) {
			v = binary.NativeEndian.Uint64(b)
		} else {
			v = binary.BigEndian.Uint64(b)
		}
	default:
		return 0, false
	}
	return v, true
}

// hooks names a base chain's hook number, by family.
func hookName(family uint8, n uint32) string {
	switch family {
	case 5: // NFPROTO_NETDEV
		if n < 2 {
			return []string{"ingress", "egress"}[n]
		}
	case 3: // NFPROTO_ARP
		if n < 3 {
			return []string{"input", "output", "forward"}[n]
		}
	default:
		if n < 6 {
			return []string{"prerouting", "input", "forward", "output", "postrouting", "ingress"}[n]
		}
	}
	return fmt.Sprintf("hook %d", n)
}

// familyName is nft's name of an nf_tables family.
func familyName(f uint8) string {
	switch f {
	case 1:
		return "inet"
	case 2:
		return "ip"
	case 3:
		return "arp"
	case 5:
		return "netdev"
	case 7:
		return "bridge"
	case 10:
		return "ip6"
	}
	return fmt.Sprintf("family %d", f)
}
