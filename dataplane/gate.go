package dataplane

// A Gate holds rules of other components that the walked plane's own dumps
// do not show, and judges a packet at a hook by them: on a node whose
// kube-proxy writes iptables rules, the nftables tables beside them (a
// firewalld table) see the same packets, and their drop or reject ends a
// connection whatever iptables decided. A Gate judges the hooks that run
// after the connection's destination translation (input, forward, and
// output's filter chains).
type Gate interface {
	// Judge is what those rules do with the connection's packet at hook:
	// orig is it as it arrived, cur as translated so far, dnatted whether
	// a destination translation took place. ok is true when they end it,
	// b then saying how (its Verdict, Reason, DecidedBy and Hops).
	Judge(hook Hook, orig, cur Packet, dnatted bool) (b Branch, ok bool)
}

// A GateGiver is a plane that can judge packets for another plane's walk
// by its tables that are no part of that plane (nil: it has none).
type GateGiver interface {
	Gate(env *Env) Gate
}

// A GateTaker is a plane whose walks consult the Gate of a GateGiver (made
// with the walk's Env) after its own rules at each hook the Gate judges.
type GateTaker interface {
	WithGate(GateGiver)
}
