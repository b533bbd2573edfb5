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
	// Line is the entry's text line when it was read from text.
	Line string
}
