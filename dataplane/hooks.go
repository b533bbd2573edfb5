package dataplane

// Hook is a netfilter hook a walk runs, or one of the two routing
// decisions between hooks (RouteArriving, RouteLoopback), which pick the
// hooks that follow from the packet's destination as translated so far.
// Every data plane on netfilter passes packets through the same hooks in
// the same order; only what runs at each hook differs.
type Hook string

const (
	HookPrerouting  Hook = "prerouting"
	HookInput       Hook = "input"
	HookForward     Hook = "forward"
	HookOutput      Hook = "output"
	HookPostrouting Hook = "postrouting"
	// RouteArriving is the routing decision after prerouting (and so after
	// DNAT): a packet addressed to the node goes to input, any other is
	// forwarded (forward, then postrouting).
	RouteArriving Hook = "route"
	// RouteLoopback follows postrouting for a packet the node sent: when
	// it is addressed to the node, it comes back in through input over the
	// loopback interface; otherwise it has left the node.
	RouteLoopback Hook = "localin"
)

// EntryHooks are the hooks and routing decisions a new connection's first
// packet meets from its entry, in order. An entry other than Output is
// taken as Prerouting.
func EntryHooks(e Entry) []Hook {
	if e == Output {
		return []Hook{HookOutput, HookPostrouting, RouteLoopback}
	}
	return []Hook{HookPrerouting, RouteArriving}
}

// IsRoute reports whether h is a routing decision rather than a hook.
func (h Hook) IsRoute() bool { return h == RouteArriving || h == RouteLoopback }

// Route takes the routing decision h for a packet whose destination is
// one of the node's addresses (local) or not, and returns the hooks that
// follow it: those it picks, then rest. A hook that is no routing decision
// is returned in front of rest unchanged.
func (h Hook) Route(local bool, rest []Hook) []Hook {
	switch {
	case h == RouteArriving && local, h == RouteLoopback && local:
		return append([]Hook{HookInput}, rest...)
	case h == RouteArriving:
		return append([]Hook{HookForward, HookPostrouting}, rest...)
	case h == RouteLoopback:
		return rest
	}
	return append([]Hook{h}, rest...)
}
