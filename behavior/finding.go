package behavior

import (
	"fmt"
	"sort"
	"strings"
)

// Finding types: stable CamelCase names, part of the output contract.
const (
	MissingFrontend         = "MissingFrontend"
	StaleFrontend           = "StaleFrontend"
	MissingEndpoint         = "MissingEndpoint"
	StaleEndpoint           = "StaleEndpoint"
	WeightMismatch          = "WeightMismatch"
	AffinityMismatch        = "AffinityMismatch"
	FirewallMismatch        = "FirewallMismatch"
	MasqueradeMismatch      = "MasqueradeMismatch"
	LocalPolicyMismatch     = "LocalPolicyMismatch"
	NoEndpointsRuleMismatch = "NoEndpointsRuleMismatch"
	OrphanChain             = "OrphanChain"
	LeftoverRules           = "LeftoverRules"
	BackendSplitBrain       = "BackendSplitBrain"
	MissingJumpRule         = "MissingJumpRule"
	// StaleConntrack: a conntrack entry sends a client to a backend that
	// is no longer a serving endpoint (or not in the node's rules).
	StaleConntrack = "StaleConntrack"
	// MissingVIPAddress: an IPVS virtual server's address is bound on no
	// interface of the node (ipvs mode binds it on kube-ipvs0), so IPVS
	// never sees its packets.
	MissingVIPAddress = "MissingVIPAddress"
	// ExtraVIPAddress: an address on kube-ipvs0 that no virtual server has.
	ExtraVIPAddress = "ExtraVIPAddress"
	// MissingSetMember: one of kube-proxy's ipsets (ipvs mode) lacks a
	// member a virtual server or kube-ipvs0 needs; StaleSetMember: it
	// holds one that nothing needs.
	MissingSetMember = "MissingSetMember"
	StaleSetMember   = "StaleSetMember"
	// Weight0ReadyEndpoint: an IPVS real server at weight 0 whose endpoint
	// is ready, so it gets no new connection.
	Weight0ReadyEndpoint = "Weight0ReadyEndpoint"
	// SchedulerMismatch: an IPVS virtual server schedules otherwise than
	// the node's others (kube-proxy gives them all one scheduler).
	SchedulerMismatch = "SchedulerMismatch"
	// ForeignVerdict: kube-proxy's rules for a frontend are right, but
	// another component's rule (or a built-in chain's policy) drops or
	// rejects its connections first.
	ForeignVerdict = "ForeignVerdict"
	// PodCIDRMismatch: Pods of the node have addresses outside the cluster
	// CIDR kube-proxy was given, so their connections to Services are
	// taken for outside traffic and masqueraded.
	PodCIDRMismatch = "PodCIDRMismatch"
	// KubeProxyNotSyncing: kube-proxy has changes queued that it has not
	// written for longer than its own health check allows.
	KubeProxyNotSyncing = "KubeProxyNotSyncing"
	// NodePortAddressesMismatch: the ranges kube-proxy's nodePortAddresses
	// were given hold none of the node's addresses, so its NodePorts
	// answer nowhere.
	NodePortAddressesMismatch = "NodePortAddressesMismatch"
	// ServiceCIDROverlap: Pods of the node have addresses in the Service
	// range (the API server's, or a Service's ClusterIP), where kube-proxy
	// takes connections to them for connections to Services.
	ServiceCIDROverlap = "ServiceCIDROverlap"
	// BlackHoledTraffic: part of the connections to a frontend reach no
	// backend (a branch of its random choice that no rule translates,
	// drops or rejects), while the rest are forwarded.
	BlackHoledTraffic = "BlackHoledTraffic"
)

// FindingTypes are the finding types above, for those that list them
// all (the exporter, which shows each with its count, zero included).
var FindingTypes = []string{MissingFrontend, StaleFrontend, MissingEndpoint, StaleEndpoint, WeightMismatch,
	AffinityMismatch, FirewallMismatch, MasqueradeMismatch, LocalPolicyMismatch, NoEndpointsRuleMismatch,
	OrphanChain, LeftoverRules, BackendSplitBrain, MissingJumpRule, StaleConntrack, MissingVIPAddress, ExtraVIPAddress, MissingSetMember, StaleSetMember, Weight0ReadyEndpoint, SchedulerMismatch, ForeignVerdict, PodCIDRMismatch, KubeProxyNotSyncing,
	NodePortAddressesMismatch, ServiceCIDROverlap, BlackHoledTraffic}

// Finding is one difference between what kube-proxy should have programmed
// on a node and what the kernel holds.
type Finding struct {
	Type string `json:"type"`
	Node string `json:"node"`
	// Service is the ServicePortName ("ns/name:port"), when one is
	// involved.
	Service string `json:"service,omitempty"`
	// Frontends the finding applies to.
	Frontends []string `json:"frontends,omitempty"`
	// Sources are the source classes affected.
	Sources  []string `json:"sources,omitempty"`
	Expected string   `json:"expected"`
	Observed string   `json:"observed"`
	// Rules are the kernel rules or API objects involved.
	Rules []string `json:"rules,omitempty"`
	// Endpoint is the endpoint ("ip:port") the finding is about: the one
	// missing or stale, a conntrack entry's backend, or where a kernel
	// object of the finding sends to, when its plane can tell (an
	// orphaned endpoint chain's DNAT target).
	Endpoint string `json:"endpoint,omitempty"`
	Message  string `json:"message"`
}

// Key groups findings that say the same thing for several frontends or
// source classes.
func (f Finding) key() string {
	return strings.Join([]string{f.Type, f.Node, f.Service, f.Expected, f.Observed}, "\x00")
}

// Merge folds findings that differ only in frontend or source class into
// one, and sorts the result by node, service, type.
func Merge(in []Finding) []Finding {
	idx := map[string]int{}
	var out []Finding
	for _, f := range in {
		k := f.key()
		if i, ok := idx[k]; ok {
			out[i].Frontends = union(out[i].Frontends, f.Frontends)
			out[i].Sources = union(out[i].Sources, f.Sources)
			out[i].Rules = union(out[i].Rules, f.Rules)
			continue
		}
		idx[k] = len(out)
		f.Frontends = union(nil, f.Frontends)
		f.Sources = union(nil, f.Sources)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Expected+a.Observed < b.Expected+b.Observed
	})
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// FormatProbability writes a probability as a fraction when it is one
// (1/3), else with up to 4 decimals.
func FormatProbability(p float64) string {
	for n := 1; n <= 64; n++ {
		for k := 1; k <= n; k++ {
			v := float64(k) / float64(n)
			if v-p < 1e-9 && p-v < 1e-9 {
				if k == n {
					return "1"
				}
				return fmt.Sprintf("%d/%d", k, n)
			}
		}
	}
	return fmt.Sprintf("%.4f", p)
}
