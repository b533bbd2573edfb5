package conntrack

import "net/netip"

// The types of the netlink functions (Dump, Create, Delete, Count), which
// exist on Linux only, are here so that callers build on every platform;
// netlink_other.go answers them elsewhere.

// Filter selects entries; empty fields select everything. Within a list
// any value matches; the fields combine with AND.
type Filter struct {
	// Family is IPv4, IPv6 or "" for both.
	Family string
	// Protocol is a name (tcp, udp, sctp, icmp, ...) or a number.
	Protocol string
	// OrigDst: the original destination address (a ClusterIP, say).
	OrigDst []netip.Addr
	// OrigDstPorts: the original destination port.
	OrigDstPorts []uint16
	// ReplySrc: the reply source address (the DNAT target, a pod IP).
	ReplySrc []netip.Addr
	// Zone, if set, selects that conntrack zone.
	Zone *uint16
}

// DumpStats counts what a Dump saw.
type DumpStats struct {
	// Seen is the number of entries the kernel sent (after its filter).
	Seen int
	// Passed is the number that matched the filter and went to fn.
	Passed int
	// KernelFilter says whether the kernel filtered (family, CTA_FILTER
	// or zone); see Dump.
	KernelFilter bool
}
