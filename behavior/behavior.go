// Package behavior holds the data-plane independent description of what a
// node does with packets sent to each Service frontend. Every data plane
// (iptables, nftables, ipvs) is parsed into this form, and what kube-proxy
// should program is derived from the model into it, so that drift is a
// difference in behaviour and never a difference in rule text.
package behavior

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// FrontendKind says how a frontend address is reached.
type FrontendKind string

const (
	ClusterIP    FrontendKind = "ClusterIP"
	NodePort     FrontendKind = "NodePort"
	ExternalIP   FrontendKind = "ExternalIP"
	LoadBalancer FrontendKind = "LoadBalancer"
)

// SourceClass is the kind of client a packet comes from. kube-proxy treats
// them differently (masquerade, ETP Local short-circuits), so behaviour is
// recorded per class.
type SourceClass string

const (
	// FromPod is a packet from a pod on this node (matched by the local
	// traffic detector, e.g. the cluster CIDR).
	FromPod SourceClass = "pod"
	// FromNode is a packet the node itself sends (addrtype LOCAL source,
	// nat OUTPUT).
	FromNode SourceClass = "node"
	// FromExternal is a packet from outside the cluster, arriving on an
	// interface of the node.
	FromExternal SourceClass = "external"
)

// SourceClasses lists the classes in a fixed order.
var SourceClasses = []SourceClass{FromPod, FromNode, FromExternal}

// Verdict is the fate of a new connection.
type Verdict string

const (
	// Forward: DNATed to one of the backends.
	Forward Verdict = "forward"
	// Reject: refused with an ICMP error (no endpoints).
	Reject Verdict = "reject"
	// Drop: silently dropped (no local endpoints, or source not allowed).
	Drop Verdict = "drop"
	// Unhandled: no service rule touched the packet.
	Unhandled Verdict = "unhandled"
	// Unknown: the path goes on in rules the input does not hold (an
	// excerpt's jump to a chain it lacks), so its fate cannot be told;
	// Reason says where it went.
	Unknown Verdict = "unknown"
)

// Key identifies a frontend: destination address (empty for a NodePort
// that is open on every local address), port and protocol.
type Key struct {
	Kind     FrontendKind `json:"kind"`
	IP       string       `json:"ip,omitempty"`
	Port     int32        `json:"port"`
	Protocol string       `json:"protocol"`
}

func (k Key) String() string {
	if k.Kind == NodePort {
		if k.IP == "" {
			return fmt.Sprintf("NodePort %d/%s", k.Port, k.Protocol)
		}
		return fmt.Sprintf("NodePort %s:%d/%s", k.IP, k.Port, k.Protocol)
	}
	return fmt.Sprintf("%s %s:%d/%s", k.Kind, k.IP, k.Port, k.Protocol)
}

// Addr returns the destination in IP:port form ("*:port" for an any-address
// NodePort).
func (k Key) Addr() string {
	ip := k.IP
	if ip == "" {
		ip = "*"
	}
	return fmt.Sprintf("%s:%d", ip, k.Port)
}

// Backend is one DNAT target with its effective probability for a new
// connection.
type Backend struct {
	Endpoint    string  `json:"endpoint"` // IP:port
	Probability float64 `json:"probability"`
	// HairpinMasquerade: a packet from the endpoint's own address is
	// masqueraded (so a pod reaching itself through the Service works).
	HairpinMasquerade bool `json:"hairpinMasquerade,omitempty"`
	// Rules are the kernel rules on the path to this backend (for an
	// expected backend, the API object it comes from).
	Rules []Rule `json:"rules,omitempty"`
}

// Outcome is what happens to a new connection of one source class.
type Outcome struct {
	Verdict    Verdict   `json:"verdict"`
	Backends   []Backend `json:"backends,omitempty"`
	Masquerade bool      `json:"masquerade"`
	// MasqueradedBy, when set, names the chains of other components than
	// kube-proxy that masquerade the connection: kube-proxy's own rules do
	// not (a CNI masquerading pod traffic that leaves the pod network).
	MasqueradedBy string `json:"masqueradedBy,omitempty"`
	// DecidedBy, when set, names the rule of another component than
	// kube-proxy (or a built-in chain's policy) that dropped or rejected
	// the connection: the verdict is not kube-proxy's.
	DecidedBy string `json:"decidedBy,omitempty"`
	// Reason explains a reject or drop, taken from kube-proxy's comment
	// where it wrote one.
	Reason string `json:"reason,omitempty"`
	// Rules are the kernel rules that decided a reject, drop or unhandled
	// outcome, and the ones common to all backends.
	Rules []Rule `json:"rules,omitempty"`
	// Assumed says what the walks to this outcome took for granted where
	// the input did not show it (a chain an excerpt lacks, filled in from
	// kube-proxy's layout; a redacted address; an interface not shown):
	// the answer holds only if those hold.
	Assumed []string `json:"assumed,omitempty"`
	// Leftover is the share of a forwarded frontend's connections that
	// reach no backend (nil: none): a branch of the random choice that no
	// rule translates, or that is dropped or rejected.
	Leftover *Leftover `json:"leftover,omitempty"`
}

// Leftover is the share of connections to a frontend that reach no
// backend while the rest are forwarded.
type Leftover struct {
	Probability float64 `json:"probability"`
	// Verdict is what happens to them: Unhandled (they leave the rules
	// untranslated, to an address no one answers at), Drop or Reject.
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	// Rules are the rules of the first such branch.
	Rules []Rule `json:"rules,omitempty"`
}

// Rule is one kernel rule on a path, as its plane describes it, so that a
// reader needs no knowledge of the plane to show or select it.
type Rule struct {
	// Table and Chain hold the rule: "nat" and "KUBE-SVC-…" (iptables),
	// "ip kube-proxy" and "service-…" (nftables).
	Table string `json:"table,omitempty"`
	Chain string `json:"chain,omitempty"`
	// Line is its line in the dump or its handle (see Numbering); 0 for a
	// rule the plane assumed.
	Line int `json:"line,omitempty"`
	// Text is the rule as the plane shows it, with its table and chain.
	Text string `json:"text"`
	// Element is the set or map element the rule matched, when it looked
	// one up.
	Element string `json:"element,omitempty"`
	// Service is the Service port ("ns/name:port") the rule belongs to,
	// when the plane can tell (kube-proxy's comments, chain names).
	Service string `json:"service,omitempty"`
	// Endpoint is the endpoint ("ip:port") the rule is one endpoint's
	// rule of, when it is.
	Endpoint string `json:"endpoint,omitempty"`
	// Shared marks the plumbing every path goes through (the jumps from
	// the built-in chains, the filter passes, the masquerade rules), as
	// opposed to the Service's own rules.
	Shared bool `json:"shared,omitempty"`
}

// RuleTexts are the rules' texts.
func RuleTexts(rs []Rule) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Text)
	}
	return out
}

// Affinity is ClientIP session affinity.
type Affinity struct {
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// Frontend is one address a Service answers on, and what the node does with
// connections to it.
type Frontend struct {
	Key Key `json:"key"`
	// Service is the ServicePortName ("ns/name:port" or "ns/name"), when
	// known.
	Service string `json:"service,omitempty"`
	// Outcomes per source class.
	Outcomes map[SourceClass]Outcome `json:"outcomes"`
	Affinity *Affinity               `json:"affinity,omitempty"`
	// SourceRanges, when set, are the only sources allowed in (the
	// loadBalancerSourceRanges firewall); others are dropped.
	SourceRanges []string `json:"sourceRanges,omitempty"`
	// OutsideRanges, for a frontend with SourceRanges, is the fate of a
	// source outside every allowed range: drop where the firewall holds,
	// unhandled where its drop rule is gone and such clients pass
	// untouched.
	OutsideRanges Verdict `json:"outsideRanges,omitempty"`
	// LocalOnly: external traffic goes only to endpoints on this node.
	LocalOnly bool `json:"localOnly,omitempty"`
	// Listed (observed tables): a rule or map element of the kernel state
	// names this frontend. An unlisted frontend that is still rejected
	// or dropped meets a catch-all rule, not one of its own.
	Listed bool `json:"listed,omitempty"`
}

// Table is the behaviour of one node and IP family.
type Table struct {
	Node      string     `json:"node"`
	Family    string     `json:"family"` // IPv4 or IPv6
	Frontends []Frontend `json:"frontends"`
	// Notes are things the producer could not fully evaluate (unknown
	// matches, inferred settings).
	Notes []string `json:"notes,omitempty"`
}

// Sort orders frontends by key and backends by endpoint, so that tables
// compare and render stably.
func (t *Table) Sort() {
	slices.SortFunc(t.Frontends, func(a, b Frontend) int { return CompareKeys(a.Key, b.Key) })
	for _, f := range t.Frontends {
		for _, o := range f.Outcomes {
			// Sorted in place: a list already sorted, which outcomes may
			// share, is left as it is.
			if !slices.IsSortedFunc(o.Backends, compareBackends) {
				SortBackends(o.Backends)
			}
		}
	}
}

// SortBackends orders backends by endpoint, as Table.Sort does.
func SortBackends(bs []Backend) { slices.SortFunc(bs, compareBackends) }

func compareBackends(a, b Backend) int { return strings.Compare(a.Endpoint, b.Endpoint) }

// Find returns the frontend with the given key.
func (t *Table) Find(k Key) (*Frontend, bool) {
	for i := range t.Frontends {
		if t.Frontends[i].Key == k {
			return &t.Frontends[i], true
		}
	}
	return nil, false
}

// Index maps each key of the table to its frontend, for callers that look
// many up (Find is a scan). It is not kept up to date with later changes.
func (t *Table) Index() map[Key]*Frontend {
	m := make(map[Key]*Frontend, len(t.Frontends))
	for i := range t.Frontends {
		if _, dup := m[t.Frontends[i].Key]; !dup {
			m[t.Frontends[i].Key] = &t.Frontends[i]
		}
	}
	return m
}

// Less orders keys by kind, address, port and protocol.
func Less(a, b Key) bool { return CompareKeys(a, b) < 0 }

// CompareKeys orders keys as Less does, for slices.SortFunc.
func CompareKeys(a, b Key) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	if c := strings.Compare(a.IP, b.IP); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	return strings.Compare(a.Protocol, b.Protocol)
}
