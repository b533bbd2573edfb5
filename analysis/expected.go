package analysis

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// ExpectedInput is what Expected derives from.
type ExpectedInput struct {
	View   *model.NodeView
	Config snapshot.ProxyConfig
	// LocalAddrs are the addresses of the node's own interfaces, when
	// known (read live): nodePortAddresses resolve against them.
	LocalAddrs []string
	// NodePortIPs, when NodePortIPsKnown, are the NodePort addresses the
	// kernel state lists; they stand in for LocalAddrs when those are not
	// known (an import), since which node addresses are local is node
	// state, not API state.
	NodePortIPs      []string
	NodePortIPsKnown bool
	// Probes is the space the probe sources are chosen from, the same as
	// the observed side's; its NodeIPs are every address local to the
	// node.
	Probes behavior.ProbeSpace
	// Release is the kube-proxy release whose behaviour is expected.
	Release proxyrelease.Release
}

// Expected derives the behaviour table from kube-proxy's view of a node:
// what every frontend should do for each source class. It follows the
// proxier's rules (dataplane reference §2.5), not any one rule layout, so
// every data plane is compared against the same table.
func Expected(in ExpectedInput) (*behavior.Table, []string) {
	v, cfg := in.View, in.Config
	t := &behavior.Table{Node: v.Node, Family: v.Family}
	space := in.Probes
	if space.ClusterCIDRs == nil && space.NodeIPs == nil {
		space.ClusterCIDRs = behavior.ParsePrefixes(cfg.ClusterCIDRs)
		for _, ip := range v.NodeIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				space.NodeIPs = append(space.NodeIPs, a)
			}
		}
	}
	traits := plugins.TraitsOf(cfg.Mode)
	det := newLocalDetector(cfg, traits, space.ClusterCIDRs)
	npIPs, notes := in.nodePortIPs(traits)
	local := newLocalDelivery(space.NodeIPs)
	// The ports' frontends are independent: a large node's are worked
	// out on every CPU.
	rules := expectRules{masqAll: cfg.MasqueradeAll, traits: traits,
		nodeDropsNoLocal: traits.EarlyEndpointCheck && in.Release.NFTablesChecksEndpointsBeforeDNAT()}
	t.Frontends = inRuns(len(v.Ports), expectedRun, func(out []behavior.Frontend, i int) []behavior.Frontend {
		p := &v.Ports[i]
		for _, k := range frontendKeys(p, npIPs) {
			out = append(out, expectFrontend(p, k, space, local, det, rules))
		}
		return out
	})
	if !det.on() && !cfg.MasqueradeAll {
		notes = append(notes, "no cluster CIDR known: the local-traffic detector is off, so off-cluster traffic to ClusterIPs is not masqueraded")
	}
	t.Notes = notes
	t.Sort()
	return t, notes
}

// expectedRun is the fewest ports a CPU works out the frontends of: a
// smaller node's are not worth a goroutine.
const expectedRun = 1024

// frontendKeys lists a port's frontends; npIPs are the NodePort addresses
// (nil: every local address).
func frontendKeys(p *model.ServicePort, npIPs []string) []behavior.Key {
	var keys []behavior.Key
	k := func(kind behavior.FrontendKind, ip string) behavior.Key {
		port := p.Port
		if kind == behavior.NodePort {
			port = p.NodePort
		}
		return behavior.Key{Kind: kind, IP: ip, Port: port, Protocol: p.Protocol}
	}
	if p.ClusterIP != "" {
		keys = append(keys, k(behavior.ClusterIP, p.ClusterIP))
	}
	for _, ip := range p.ExternalIPs {
		keys = append(keys, k(behavior.ExternalIP, ip))
	}
	for _, ip := range p.LoadBalancerIPs {
		keys = append(keys, k(behavior.LoadBalancer, ip))
	}
	if p.NodePort != 0 {
		if npIPs == nil {
			keys = append(keys, k(behavior.NodePort, ""))
		}
		for _, ip := range npIPs {
			keys = append(keys, k(behavior.NodePort, ip))
		}
	}
	return keys
}

// nodePortIPs resolves nodePortAddresses to the addresses NodePorts open
// on: nil means every local address (iptables mode's default). CIDRs
// and "primary" (the node's primary addresses; nftables mode's default)
// match only addresses local to the node.
func (in ExpectedInput) nodePortIPs(traits model.ProxierTraits) ([]string, []string) {
	spec := in.Config.NodePortAddresses
	if len(spec) == 0 {
		spec = traits.DefaultNodePortAddresses
	}
	cidrs, all := nodePortCIDRs(spec, in.View.Family, in.View.NodeIPs)
	if all && traits.NodePortsListedByPlane {
		return in.listedNodePortIPs()
	}
	if all {
		return nil, nil
	}
	var cands []string
	for _, pfx := range cidrs {
		for _, ip := range append(append([]string(nil), in.View.NodeIPs...), in.LocalAddrs...) {
			if a, err := netip.ParseAddr(ip); err == nil && pfx.Contains(a) && !a.IsLoopback() {
				cands = append(cands, ip)
			}
		}
	}
	local, how := in.LocalAddrs, ""
	if len(local) == 0 && in.NodePortIPsKnown {
		local, how = in.NodePortIPs, "the node's local addresses are unknown: NodePort addresses taken from the kernel's own list"
	}
	out := []string{}
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c] || (local != nil || in.NodePortIPsKnown) && !slices.Contains(local, c) {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	var notes []string
	if how != "" {
		notes = append(notes, how)
	}
	if len(out) == 0 && len(givenNodePortCIDRs(spec, in.View.Family)) == 0 {
		// Given CIDRs that match no address are a finding
		// (nodePortChecks); this is kube-proxy's own choice of address.
		notes = append(notes, fmt.Sprintf("nodePortAddresses %v match no local address of node %s: NodePorts are reachable on no address there", spec, in.View.Node))
	}
	return out, notes
}

// expectRules are the settings and release traits every frontend's
// outcomes depend on.
type expectRules struct {
	masqAll bool
	traits  model.ProxierTraits
	// nodeDropsNoLocal: the node's own connections to an external IP or
	// load balancer IP of a Service with a Local external policy and no
	// endpoint on the node are dropped (nftables mode of v1.31 to v1.33.5
	// checks for endpoints before it DNATs them).
	nodeDropsNoLocal bool
}

func expectFrontend(p *model.ServicePort, k behavior.Key, space behavior.ProbeSpace, local localDelivery, det localDetector, rules expectRules) behavior.Frontend {
	masqAll := rules.masqAll
	spn := p.SPN()
	f := behavior.Frontend{Key: k, Service: spn, Outcomes: map[behavior.SourceClass]behavior.Outcome{}}
	if p.AffinityTimeoutSeconds > 0 {
		f.Affinity = &behavior.Affinity{TimeoutSeconds: p.AffinityTimeoutSeconds}
	}
	external := k.Kind != behavior.ClusterIP
	var ranges []netip.Prefix
	if k.Kind == behavior.LoadBalancer && p.HasAnyEndpoints {
		ranges = behavior.ParsePrefixes(p.LoadBalancerSourceRanges)
		f.SourceRanges = append([]string(nil), p.LoadBalancerSourceRanges...)
		if len(ranges) > 0 {
			f.OutsideRanges = behavior.Drop
		}
	}
	probes := space.Choose(ranges)
	if external {
		f.LocalOnly = p.ExternalPolicyLocal
	} else {
		f.LocalOnly = p.InternalPolicyLocal
	}
	memo := backendMemo{}
	for _, c := range behavior.SourceClasses {
		var src netip.Addr
		switch c {
		case behavior.FromPod:
			src = probes.Pod
		case behavior.FromNode:
			src = probes.Node
		default:
			src = probes.External
		}
		var o behavior.Outcome
		switch {
		case !p.HasAnyEndpoints:
			o = behavior.Outcome{Verdict: behavior.Reject, Reason: spn + " has no endpoints"}
		case !behavior.Allowed(src, ranges):
			o = behavior.Outcome{Verdict: behavior.Drop, Reason: fmt.Sprintf("%s: source %s not in loadBalancerSourceRanges", spn, src)}
		case rules.traits.LocalFallback:
			o = fallbackOutcome(p, c, src, det, external, rules, local, memo)
		case !external:
			o = internalOutcome(p, c, src, det, masqAll, local, memo)
		case c == behavior.FromNode && rules.nodeDropsNoLocal && p.ExternalPolicyLocal && len(p.LocalEndpoints) == 0 && k.Kind != behavior.NodePort:
			o = behavior.Outcome{Verdict: behavior.Drop, Reason: spn + " has no local endpoints (" + rules.traits.Mode + " mode of kube-proxy v1.31 to v1.33.5 checks the node's own connections for endpoints before DNAT)"}
		default:
			o = externalOutcome(p, c, det.on(), local, memo)
		}
		if c != behavior.FromNode {
			o = local.unmasqueraded(o)
		}
		f.Outcomes[c] = o
	}
	return f
}

func internalOutcome(p *model.ServicePort, c behavior.SourceClass, src netip.Addr, det localDetector, masqAll bool, local localDelivery, memo backendMemo) behavior.Outcome {
	eps := p.ClusterEndpoints
	if p.InternalPolicyLocal {
		eps = p.LocalEndpoints
		if len(eps) == 0 {
			return behavior.Outcome{Verdict: behavior.Drop, Reason: p.SPN() + " has no local endpoints"}
		}
	}
	masq := masqAll || (det.on() && det.notLocal(c, src))
	return forward(eps, masq, local, memo)
}

func externalOutcome(p *model.ServicePort, c behavior.SourceClass, detector bool, local localDelivery, memo backendMemo) behavior.Outcome {
	if !p.ExternalPolicyLocal {
		return forward(p.ClusterEndpoints, true, local, memo)
	}
	switch {
	case c == behavior.FromPod && detector:
		// "pod traffic for ... external destinations" short-circuits to
		// the cluster endpoints, without masquerade.
		return forward(p.ClusterEndpoints, false, local, memo)
	case c == behavior.FromNode:
		return forward(p.ClusterEndpoints, true, local, memo)
	}
	if len(p.LocalEndpoints) == 0 {
		return behavior.Outcome{Verdict: behavior.Drop, Reason: p.SPN() + " has no local endpoints"}
	}
	return forward(p.LocalEndpoints, false, local, memo)
}

func forward(eps []model.Endpoint, masq bool, local localDelivery, memo backendMemo) behavior.Outcome {
	o := behavior.Outcome{Verdict: behavior.Forward, Masquerade: masq}
	key := backendKey{len(eps), nil}
	if len(eps) > 0 {
		key.first = &eps[0]
	}
	if bs, ok := memo[key]; ok {
		o.Backends = bs
		return o
	}
	var from objectRule
	if len(eps) > 0 {
		o.Backends = make([]behavior.Backend, 0, len(eps))
	}
	for _, e := range eps {
		// Only an endpoint on this node can send to the Service through
		// this node and be answered by itself, so hairpin masquerading is
		// due only there: an endpoint kube-proxy counts as local (its
		// nodeName), or one on the node's own address whatever its
		// nodeName says (the API server's endpoint on a control-plane
		// node has none).
		b := behavior.Backend{Endpoint: e.String(), Probability: 1 / float64(len(eps)), HairpinMasquerade: e.Local || local.has(e.IP)}
		switch {
		case e.Slice != "":
			b.Rules = from.of("EndpointSlice", e.Slice)
		case e.EndpointsObject != "":
			b.Rules = from.of("Endpoints", e.EndpointsObject)
		}
		o.Backends = append(o.Backends, b)
	}
	memo[key] = o.Backends
	return o
}

// objectRule is the rule that names the API object a backend comes from,
// shared by the backends from the same object (rules are not changed once
// made): a port's endpoints mostly come from one EndpointSlice.
type objectRule struct {
	kind, name string
	rules      []behavior.Rule
}

func (r *objectRule) of(kind, name string) []behavior.Rule {
	if r.rules == nil || r.kind != kind || r.name != name {
		r.kind, r.name = kind, name
		r.rules = []behavior.Rule{{Text: kind + " " + name}}
	}
	return r.rules
}

// backendMemo shares one frontend's backend lists between its source
// classes (they read the same endpoints): the outcomes' Backends are not
// changed once made.
type backendMemo map[backendKey][]behavior.Backend

type backendKey struct {
	n     int
	first *model.Endpoint
}

// localDelivery is the set of the node's own addresses: a connection
// arriving on an interface and DNATed to one of them is delivered to the
// node (INPUT) and never reaches POSTROUTING, so it is never masqueraded.
type localDelivery map[string]bool

func newLocalDelivery(addrs []netip.Addr) localDelivery {
	l := localDelivery{}
	for _, a := range addrs {
		l[a.String()] = true
	}
	return l
}

func (l localDelivery) has(ip string) bool {
	if l[ip] {
		return true
	}
	a, err := netip.ParseAddr(ip)
	return err == nil && a.IsLoopback()
}

// unmasqueraded corrects the masquerading of a connection that enters on an
// interface: it is masqueraded only if some backend is not local.
func (l localDelivery) unmasqueraded(o behavior.Outcome) behavior.Outcome {
	if !o.Masquerade || o.Verdict != behavior.Forward {
		return o
	}
	for _, b := range o.Backends {
		ap, err := netip.ParseAddrPort(b.Endpoint)
		if err != nil || !l.has(ap.Addr().String()) {
			return o
		}
	}
	o.Masquerade = false
	return o
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
