// Package conntrack reads the kernel's connection tracking table (over
// netlink, streaming, or from conntrack -L / /proc/net/nf_conntrack text),
// deletes chosen entries, and writes entries in conntrack's text form so
// that a Snapshot keeps them verbatim.
package conntrack

import "net/netip"

// Tuple is one direction of a connection.
type Tuple struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
}

// Entry is one conntrack entry.
type Entry struct {
	// Family is IPv4 or IPv6.
	Family string
	// Protocol is tcp, udp, sctp, icmp, icmpv6 or a number.
	Protocol string
	// Orig is the tuple of the first packet; Reply the tuple the answer
	// is expected with (after NAT: Reply.Src is the DNAT target).
	Orig, Reply Tuple
	// State is the protocol state (TCP ESTABLISHED, SCTP ...; "" for UDP).
	State string
	// Timeout is the number of seconds before the entry expires.
	Timeout uint32
	// Assured, Unreplied: status flags as conntrack prints them.
	Assured, Unreplied bool
	Mark               uint32
	Zone               uint16
	ID                 uint32
	// Packets and bytes per direction, when accounting is on
	// (nf_conntrack_acct); Accounting says whether they are known.
	Accounting               bool
	OrigPackets, OrigBytes   uint64
	ReplyPackets, ReplyBytes uint64
	// ICMP is the type, code and id of an icmp or icmpv6 entry's original
	// direction (the reply's type is derived from it); zero for other
	// protocols. Added so that Format and Create keep icmp entries whole.
	ICMP ICMP
	// Line is the entry's text line when it was read from text.
	Line string
}

// ICMP identifies an icmp or icmpv6 flow; its ports are 0.
type ICMP struct {
	Type, Code uint8
	ID         uint16
}
