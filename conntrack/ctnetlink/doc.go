// Package ctnetlink talks to the kernel's conntrack table over netlink
// (NETLINK_NETFILTER, subsystem NFNL_SUBSYS_CTNETLINK): it frames
// requests, sends them, reads the reply datagrams and splits them into
// messages, and turns acknowledgements into errors (KernelError). What the
// messages mean (entries, filters, counts) is package conntrack's.
//
// A Conn reaches the kernel only through a Transport, which sends a
// datagram and receives one: Socket is the real one, a NETLINK_NETFILTER
// socket in the network namespace of the thread that opened it, and
// package ctnetlinktest has one that records a conversation with the
// kernel and one that plays a recording back, so that the readers can be
// tested without root.
//
// The package is Linux only; elsewhere it is empty.
package ctnetlink
