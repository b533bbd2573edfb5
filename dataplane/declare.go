package dataplane

import "github.com/svctrace/svctrace/model"

// DumpKind is one kind of kernel dump a plane reads: its name in a
// snapshot, the tools that dump it on a node, and the collect flag that
// imports a file of it. A plane declares its kinds (Declarer), and the
// collectors, the importer and collect's flags follow from the
// declarations: nothing outside the plane lists them.
type DumpKind struct {
	// Collector names the dump in a snapshot (snapshot.Dump.Collector).
	Collector string
	// Family is the IP family the dump holds ("IPv4", "IPv6"); "" for a
	// dump of both.
	Family string
	// Tools dump it on a node, each its own read (one per iptables
	// backend); none when another path reads it (conntrack's netlink).
	Tools []DumpTool
	// Optional: a tool that fails is a note, not an error (ipset fails
	// where the kernel has no ipset support, on nodes that need none).
	Optional bool
	// Flag is collect's flag that imports files of it ("iptables-save"
	// for --iptables-save FILE), and Help its help.
	Flag, Help string
	// Backends: a file of it names its iptables backend in its header,
	// which the import records (iptables-save).
	Backends bool
}

// DumpTool is a command that dumps a DumpKind on a node.
type DumpTool struct {
	// Backend is the iptables backend it reads ("legacy", "nf_tables"),
	// or "".
	Backend string
	// What names what it reads, for messages ("the IPv4 legacy backend").
	What string
	Argv []string
}

// A Declarer is a Loader that declares the dumps it reads and how its
// mode's proxier departs from kube-proxy's common behaviour. A plane that
// reads another plane's dumps too (ipvs mode reads iptables rules)
// declares only its own.
type Declarer interface {
	Loader
	Dumps() []DumpKind
	Traits() model.ProxierTraits
}
