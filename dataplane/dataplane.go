// Package dataplane is the contract between svctrace and each kube-proxy
// data plane (iptables, nftables, ...): a packet, the paths it can take
// through a node's rules, and what a parsed kernel state must offer so that
// observe, trace, explain and drift need no mode-specific code.
package dataplane

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// Entry is where a packet enters the node's netfilter hooks.
type Entry string

const (
	// Prerouting: a packet arriving on an interface (from a pod or from
	// outside): prerouting, then input or forward, then postrouting.
	Prerouting Entry = "prerouting"
	// Output: a packet the node itself sends: output, postrouting (and
	// input when it is addressed to the node).
	Output Entry = "output"
)

// Packet is the first packet of a new connection.
type Packet struct {
	Src, Dst         netip.Addr
	Protocol         string // tcp, udp, sctp (lower case)
	SrcPort, DstPort uint16
	// InIface is the input interface, when known ("" otherwise).
	InIface string
	Entry   Entry
}

func (p Packet) String() string {
	return fmt.Sprintf("%s %s -> %s (%s)", p.Protocol, netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort), p.Entry)
}

// Env is what a walker needs to know about the node.
type Env struct {
	// LocalAddrs are the node's own addresses (addrtype LOCAL, fib daddr
	// type local); loopback addresses are always local.
	LocalAddrs []netip.Addr
	// PodIface is the input interface a packet from a pod on the node
	// arrives on, where kube-proxy's local-traffic detector goes by
	// interface ("" where it goes by CIDR, or is unknown).
	PodIface string
	// Sticky names the affinity records that already hold the packet's
	// source (iptables recent lists, nftables affinity sets), so that an
	// affinity check matches for them. Nil for a new client.
	Sticky map[string]bool
}

// IsLocal reports whether a is one of the node's addresses.
func (e *Env) IsLocal(a netip.Addr) bool {
	if a.IsLoopback() {
		return true
	}
	for _, l := range e.LocalAddrs {
		if l == a {
			return true
		}
	}
	return false
}

// Verdict is the fate of a branch.
type Verdict string

const (
	Accept Verdict = "ACCEPT"
	Drop   Verdict = "DROP"
	Reject Verdict = "REJECT"
	// Redirect: to a local port (the userspace proxier).
	Redirect Verdict = "REDIRECT"
	// Missing: the path jumps to a chain the dump does not hold (only an
	// excerpt can).
	Missing Verdict = "MISSING"
)

// Hop is one rule a packet matched, or a policy it fell to.
type Hop struct {
	// Table is the iptables table (nat, filter) or the nftables table
	// ("ip kube-proxy").
	Table string
	Chain string
	// Line is the rule's line in the dump (iptables) or its handle
	// (nftables); 0 for a policy or an assumed rule.
	Line int
	// Rule is the rule as the kernel prints it; for a policy, a note.
	Rule string
	// Element is the set or map element that matched, when the rule
	// looked one up (nftables).
	Element string
	// Probability of this hop given the path so far, when it is a random
	// branch (statistic, numgen); 0 otherwise.
	Probability float64
	// IsPolicy marks a chain policy rather than a rule.
	IsPolicy bool
}

// HopInfo is a plane's description of a hop, so that nothing outside the
// plane reads rule text. Walks leave it out (a walk makes many hops that
// nobody shows); Plane.Describe gives it for the hops a reader keeps.
type HopInfo struct {
	// Text is the rule as shown in reports, with its table and chain.
	Text string
	// Service is the Service port ("ns/name:port") the hop belongs to,
	// when the plane can tell.
	Service string
	// Endpoint is the endpoint ("ip:port") the hop is on the way to,
	// when the hop is one endpoint's (its chain, its map element).
	Endpoint string
	// Shared marks plumbing every path goes through.
	Shared bool
	// ByLine says Hop.Line is a line of the dump (iptables) rather than a
	// rule handle (nftables).
	ByLine bool
}

func (h Hop) String() string { return h.Rule }

// Branch is one way a packet can go, with its probability.
type Branch struct {
	Probability float64
	Hops        []Hop
	Verdict     Verdict
	// Reason is kube-proxy's comment on the rule that rejected or dropped
	// the packet.
	Reason string
	// DNAT is the translated destination ("ip:port"), empty if none.
	DNAT string
	// Redirect is the local port of a REDIRECT.
	Redirect string
	// Missing is the chain an excerpt jumps to without holding it.
	Missing string
	// MissingEndpoint: Missing is one endpoint's chain, so the branch
	// reaches one backend whose address the input does not show (a
	// Service's chain could lead anywhere).
	MissingEndpoint bool
	// MissingAddr is that endpoint's address (ip:port) where a comment
	// on the way names it ("": not known).
	MissingAddr string
	Masquerade  bool
	// MasqueradeBy, when set, is the chain of another component than
	// kube-proxy whose rule masqueraded the packet ("nat FLANNEL-POSTRTG"):
	// kube-proxy's own rules did not.
	MasqueradeBy string
	// DecidedBy, when set, is the rule of another component than
	// kube-proxy (or a built-in chain's policy) that dropped or rejected
	// the packet, with the component where the plane can tell it: the
	// verdict is not kube-proxy's.
	DecidedBy string
	// AffinitySeconds: the branch records its client so that the client
	// keeps this backend for that long (ClientIP affinity); 0 without.
	AffinitySeconds int32
	// AffinityKey names the affinity record (recent list, nftables set)
	// the branch writes: pass it in Env.Sticky to trace a returning
	// client.
	AffinityKey string
	// SourcePrefixes are the address ranges the path tested the source
	// against (firewall ranges, local-traffic detector), for finding the
	// source ranges a frontend allows.
	SourcePrefixes []netip.Prefix
	// Notes are assumptions made on this branch (what could not be
	// evaluated).
	Notes []string
}

// Walker walks packets through a parsed kernel state.
type Walker interface {
	Walk(Packet) []Branch
	// WalkWith is Walk narrowed to what the caller asks (see WalkOptions).
	WalkWith(Packet, WalkOptions) []Branch
}

// AppendWalker is a Walker that appends a walk's branches to the caller's
// slice: a node's observation walks each frontend a dozen times, and
// reuses one slice for a frontend's walks after another's.
type AppendWalker interface {
	Walker
	AppendWalk([]Branch, Packet, WalkOptions) []Branch
}

// ScopedWalker is a Walker that can keep what the walks of one Service's
// frontends read of the state only while they last: on a node of ten
// thousand Services, the state each Service's walks read (its chains,
// parsed) would otherwise all be kept until the end. Scope returns the
// walker of those walks, safe for one goroutine, and what ends the scope.
type ScopedWalker interface {
	Walker
	Scope() (Walker, func())
}

// WalkOptions narrow a walk to the answer a caller needs, so that a node
// with thousands of frontends is not walked in full detail for questions
// about one backend or one verdict.
type WalkOptions struct {
	// Toward, when valid, drops every branch whose destination is
	// translated to another address and port, at the translation: a
	// question about one backend does not follow the others. Branches that
	// are not translated are kept.
	Toward netip.AddrPort
	// NoHops leaves Branch.Hops empty: only outcomes are wanted.
	NoHops bool
	// NoSourcePrefixes leaves Branch.SourcePrefixes empty: the source
	// ranges a frontend allows are not asked (a probe from a Pod, the node
	// or an endpoint). Every endpoint's hairpin rule tests the source, so
	// a walk that records them copies a list on every branch.
	NoSourcePrefixes bool
}

// Keeps reports whether a branch translated to dst stays in a walk with
// these options.
func (o WalkOptions) Keeps(dst netip.AddrPort) bool {
	return !o.Toward.IsValid() || o.Toward == dst
}

// Inferred is what a kernel state tells of kube-proxy's settings.
type Inferred struct {
	Mode          string
	ClusterCIDRs  []string
	MasqueradeBit int32
	// NodePortIPs are the addresses the state accepts NodePorts on, when
	// it lists them (nftables' nodeport-ips set); NodePortIPsKnown says
	// it does (the list may be empty).
	NodePortIPs      []string
	NodePortIPsKnown bool
	// LocalBridge and LocalIfacePrefix are the input interface of a
	// local-traffic detector that goes by interface (kube-proxy's
	// BridgeInterface and InterfaceNamePrefix modes), when the rules show
	// one instead of a cluster CIDR.
	LocalBridge, LocalIfacePrefix string
	// Evidence says, per setting, where it was read.
	Evidence []string
}

// LocalIface reads a detector's interface as a rule names it: a name
// ending in the wildcard ("veth+" in iptables, "veth*" in nftables) is a
// prefix, another a bridge.
func (in *Inferred) LocalIface(name, wildcard string) {
	if prefix, ok := strings.CutSuffix(name, wildcard); ok {
		in.LocalIfacePrefix = prefix
	} else {
		in.LocalBridge = name
	}
}

// BackendNamer is a Plane that runs on one of several kernel backends
// (iptables: legacy or nf_tables), and tells which holds what it walks.
type BackendNamer interface {
	Backend() string
}

// Plane is one parsed kernel state of one node and IP family, in the form
// svctrace works with.
type Plane interface {
	// Mode is the kube-proxy mode whose objects this is ("iptables",
	// "nftables").
	Mode() string
	// HasKubeProxy reports whether kube-proxy's objects exist in it.
	HasKubeProxy() bool
	// Walker walks packets through it. A walker and every method of the
	// plane must be safe for concurrent use: observe walks frontends in
	// parallel, and analysis finds the frontends while it infers the
	// settings and runs the checks beside the walks.
	Walker(env *Env) Walker
	// Frontends are the Service frontends the state handles, with the
	// Service named where the state tells (comments, chain and set
	// names). Outcomes are left empty: observe fills them by walking.
	Frontends() []behavior.Frontend
	// Checks are text-level findings behaviour cannot show: orphaned
	// chains or sets, leftovers of other proxy modes. mode is kube-proxy's
	// configured mode ("" when unknown).
	Checks(node, mode string) []behavior.Finding
	// Leftovers are kube-proxy's objects left in this state while
	// kube-proxy runs in another mode (activeMode).
	Leftovers(node, activeMode string) []behavior.Finding
	// Conflicts are findings the state gives whichever mode is active
	// (iptables: kube-proxy's chains in both backends).
	Conflicts(node string) []behavior.Finding
	// Describe tells what a hop is, from the plane's knowledge of its
	// rules (see HopInfo).
	Describe(h Hop) HopInfo
	// OwnsRule reports whether a rule on a path belongs to one of the
	// Service ports spns ("ns/name:port", "ns/name"), by the plane's own
	// naming of a Service's objects, for rules that name no Service
	// (excerpts without kube-proxy's comments).
	OwnsRule(r behavior.Rule, spns []string) bool
	// Infer reads kube-proxy's settings off the state.
	Infer() Inferred
	// Notes are what the parser inferred or could not understand.
	Notes() []string
}

// InertLeftovers is a Plane whose leftovers may act on no packet (nothing
// leads to them): those are named in notes, not reported as findings.
type InertLeftovers interface {
	InertLeftovers(node, activeMode string) []string
}
