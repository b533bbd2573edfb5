package nftables

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/svctrace/svctrace/model"
)

// RenderSettings are the kube-proxy settings and node facts its nftables
// table depends on beyond the Services and endpoints.
type RenderSettings struct {
	// Family is IPv4 or IPv6.
	Family string
	// MasqueradeBit is --iptables-masquerade-bit (14 by default): the
	// mark is 1<<bit.
	MasqueradeBit int32
	// MasqueradeAll is --masquerade-all.
	MasqueradeAll bool
	// LocalCIDR is the family's CIDR of a CIDR local-traffic detector
	// (ClusterCIDR or NodeCIDR); "" when no detector is implemented, and
	// its rules are then left out, as kube-proxy leaves them out.
	LocalCIDR string
	// LocalIface is the input interface of an interface local-traffic
	// detector, as nft names it: the bridge (BridgeInterface, "cni0"), or
	// the prefix with a wildcard (InterfaceNamePrefix, "veth*").
	LocalIface string
	// NodePortIPs are the addresses --nodeport-addresses selects; nil
	// when NodePorts open on every local address.
	NodePortIPs []string
	// ServiceCIDRs are the family's Service CIDRs, for the rule that
	// drops traffic to unallocated ClusterIPs (none: no rule).
	ServiceCIDRs []string
	// NodeIP is the node's primary address of the family: a load
	// balancer's source ranges that hold it also admit the VIPs.
	NodeIP string
	// Minor is kube-proxy's minor version (1.Minor); 0 is the newest
	// layout. Render knows the layouts of v1.31 to v1.37, each checked
	// against its release's real kube-proxy (see legacy, beta,
	// clusterIPMasqueradePort and singleDNAT for what changed when).
	Minor int
}

// singleDNAT reports whether kube-proxy DNATs a Service with one endpoint
// and no affinity straight to it, without a random number map (v1.37).
func (s RenderSettings) singleDNAT() bool {
	return s.Minor == 0 || s.Minor >= 37
}

// legacy reports whether kube-proxy writes the layout of v1.31 to v1.35:
// masquerading through the mark-for-masquerade chain, a chain per
// endpoint, and no hairpin-connections set.
func (s RenderSettings) legacy() bool {
	return s.Minor != 0 && s.Minor < 36
}

// clusterIPMasqueradePort reports whether the rule that marks ClusterIP
// traffic for masquerading in a service's chain names its port (v1.31 to
// v1.33; v1.34 and v1.35 match the address alone).
func (s RenderSettings) clusterIPMasqueradePort() bool {
	return s.Minor != 0 && s.Minor < 34
}

// mark is the masquerade mark as nft lists it.
func (s RenderSettings) mark() string {
	return fmt.Sprintf("0x%08x", uint32(1)<<uint(s.MasqueradeBit))
}

// Render is the table kube-proxy's nftables mode writes for the view, as
// it stands after a full sync: setupNFTables' fixed chains, sets and
// maps, and every service port's chains and elements from
// syncProxyRules, each in the text form nft lists it back in.
//
// A value it cannot write so that nft reads it back as the same (a
// setting that is not what it says, a string nft cannot quote) is an
// error, and nothing of the table may be written.
func Render(v *model.NodeView, s RenderSettings) (*Layout, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("nftables render: %w", err)
	}
	r := &renderer{s: s, l: newLayout(nftFamily(s.Family)), elems: map[string]map[string]string{}}
	r.ipX = r.l.Family
	r.addrType = "ipv4_addr"
	if r.ipX == "ip6" {
		r.addrType = "ipv6_addr"
	}
	r.setup()
	for i := range v.Ports {
		r.servicePort(&v.Ports[i])
	}
	for name, els := range r.elems {
		set := r.l.Sets[name]
		for _, text := range els {
			set.Elements = append(set.Elements, text)
		}
		sort.Strings(set.Elements)
	}
	if r.err != nil {
		return nil, fmt.Errorf("nftables render: %w", r.err)
	}
	return r.l, nil
}

// renderer builds one Layout from a view.
type renderer struct {
	s RenderSettings
	l *Layout
	// ipX is ip or ip6, addrType ipv4_addr or ipv6_addr.
	ipX, addrType string
	// elems are the elements of each set and map, by key: kube-proxy
	// writes an element once per key, the last value winning.
	elems map[string]map[string]string
	// err is the first value that could not be written.
	err error
}

// chain makes a regular chain exist and returns it.
func (r *renderer) chain(name string) *LayoutChain {
	c, ok := r.l.Chains[name]
	if !ok {
		r.checkName(name)
		c = &LayoutChain{}
		r.l.Chains[name] = c
	}
	return c
}

// rule appends a rule to a chain, making the chain exist.
func (r *renderer) rule(chain string, parts ...string) {
	c := r.chain(chain)
	c.Rules = append(c.Rules, strings.Join(parts, " "))
}

// set declares a set or map: "key . key" types, and for a map its data
// type.
func (r *renderer) set(name, key, data, comment string) {
	r.checkName(name)
	s := &LayoutSet{KeyType: strings.Split(key, " . "), Comment: comment}
	if data != "" {
		s.IsMap, s.DataType = true, []string{data}
	}
	r.l.Sets[name] = s
}

// elem adds an element to a declared set or map: its key parts, an
// optional comment and, in a map, its data.
func (r *renderer) elem(set string, key []string, comment, data string) {
	k := strings.Join(key, " . ")
	text := k
	if comment != "" {
		text += " comment " + r.quote(comment)
	}
	if data != "" {
		text += " : " + data
	}
	if r.elems[set] == nil {
		r.elems[set] = map[string]string{}
	}
	r.elems[set][k] = text
}

// localImplemented reports whether a local-traffic detector is in use:
// kube-proxy leaves its rules out otherwise.
func (s RenderSettings) localImplemented() bool { return s.LocalIface != "" || s.LocalCIDR != "" }

// hookChain is one of kube-proxy's chains on a hook.
type hookChain struct {
	name, typ, hook string
	prio            int
}

// baseChains are kube-proxy's chains on hooks, in the order it declares
// them: beta is the layout of v1.31 and v1.32 (nftables mode beta), whose
// filter chains all run before DNAT, and which checks ClusterIPs in an
// output chain after it.
func baseChains(beta bool) []hookChain {
	if beta {
		return []hookChain{
			{"filter-prerouting", "filter", "prerouting", -110},
			{"filter-input", "filter", "input", -110},
			{"filter-forward", "filter", "forward", -110},
			{"filter-output", "filter", "output", -110},
			{"filter-output-post-dnat", "filter", "output", -90},
			{"nat-prerouting", "nat", "prerouting", -100},
			{"nat-output", "nat", "output", -100},
			{"nat-postrouting", "nat", "postrouting", 100},
		}
	}
	return []hookChain{
		{"filter-prerouting-pre-dnat", "filter", "prerouting", -110},
		{"filter-output-pre-dnat", "filter", "output", -110},
		{"filter-input", "filter", "input", 0},
		{"filter-forward", "filter", "forward", 0},
		{"filter-output", "filter", "output", 0},
		{"nat-prerouting", "nat", "prerouting", -100},
		{"nat-output", "nat", "output", -100},
		{"nat-postrouting", "nat", "postrouting", 100},
	}
}

// jump is a rule kube-proxy writes in a base chain: to a chain, from a
// chain, on a match ("" for every packet).
type jump struct{ to, from, match string }

// jumpChains are the jumps from base chains kube-proxy writes, in order;
// beta as for baseChains.
func jumpChains(beta bool) []jump {
	firewallFrom, outputFrom, clusterIPsFrom := "filter-prerouting-pre-dnat", "filter-output-pre-dnat", "filter-output"
	if beta {
		firewallFrom, outputFrom, clusterIPsFrom = "filter-prerouting", "filter-output", "filter-output-post-dnat"
	}
	return []jump{
		{"nodeport-endpoints-check", "filter-input", "ct state new"},
		{"service-endpoints-check", "filter-input", "ct state new"},
		{"service-endpoints-check", "filter-forward", "ct state new"},
		{"service-endpoints-check", "filter-output", "ct state new"},
		{"firewall-check", firewallFrom, "ct state new"},
		{"firewall-check", outputFrom, "ct state new"},
		{"services", "nat-output", ""},
		{"services", "nat-prerouting", ""},
		{"masquerading", "nat-postrouting", ""},
		{"cluster-ips-check", "filter-forward", "ct state new"},
		{"cluster-ips-check", clusterIPsFrom, "ct state new"},
	}
}

// beta reports whether kube-proxy writes the base chains of nftables
// mode's beta (v1.31, v1.32).
func (s RenderSettings) beta() bool { return s.Minor != 0 && s.Minor < 33 }

// setup writes what a full sync writes before the service ports: the
// base chains and their jumps, and the fixed chains, sets and maps.
func (r *renderer) setup() {
	for _, bc := range baseChains(r.s.beta()) {
		r.l.Chains[bc.name] = &LayoutChain{Type: bc.typ, Hook: bc.hook, Prio: bc.prio, Policy: "accept"}
	}
	for _, j := range jumpChains(r.s.beta()) {
		r.chain(j.to)
		if j.match == "" {
			r.rule(j.from, "jump", j.to)
		} else {
			r.rule(j.from, j.match, "jump", j.to)
		}
	}
	for _, c := range []string{"services", "cluster-ips-check", "masquerading", "reject-chain"} {
		r.chain(c)
	}
	ipX, mark := r.ipX, r.s.mark()
	noLocalhost := "ip daddr != 127.0.0.0/8"
	if ipX == "ip6" {
		noLocalhost = "ip6 daddr != ::1"
	}
	dispatch := ipX + " daddr . meta l4proto . th dport vmap @"

	if r.s.legacy() {
		r.rule(markMasq, "meta mark set meta mark | "+mark)
		r.rule("masquerading", "meta mark & "+mark+" == 0x00000000 return")
		r.rule("masquerading", "meta mark set meta mark ^ "+mark)
		r.rule("masquerading", "masquerade fully-random")
	} else {
		r.set("hairpin-connections", r.addrType+" . "+r.addrType+" . inet_proto . inet_service", "", "service hairpin connections")
		r.rule("masquerading", "meta mark & "+mark+" != 0x00000000 meta mark set meta mark ^ "+mark+" masquerade fully-random")
		r.rule("masquerading", "ct status dnat", ipX, "saddr .", ipX, "daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random")
	}

	r.set(setClusterIPs, r.addrType, "", "Active ClusterIPs")
	r.rule("cluster-ips-check", ipX, "daddr @cluster-ips reject comment", r.quote("Reject traffic to invalid ports of ClusterIPs"))
	if len(r.s.ServiceCIDRs) > 0 {
		r.rule("cluster-ips-check", ipX, "daddr", anonSet(r.s.ServiceCIDRs), "drop comment", r.quote("Drop traffic to unallocated ClusterIPs"))
	}

	if r.s.NodePortIPs != nil {
		r.set("nodeport-ips", r.addrType, "", "IPs that accept NodePort traffic")
		for _, ip := range r.s.NodePortIPs {
			if a, err := netip.ParseAddr(ip); err == nil && !a.IsLoopback() {
				r.elem("nodeport-ips", []string{a.String()}, "", "")
			}
		}
	}

	r.set(mapNoEndpointServices, r.addrType+" . inet_proto . inet_service", "verdict", "vmap to drop or reject packets to services with no endpoints")
	r.set(mapNoEndpointNodePorts, "inet_proto . inet_service", "verdict", "vmap to drop or reject packets to service nodeports with no endpoints")
	r.chain("reject-chain").Comment = "helper for @no-endpoint-services / @no-endpoint-nodeports"
	r.rule("reject-chain", "reject")
	r.rule("service-endpoints-check", dispatch+mapNoEndpointServices)
	if r.s.NodePortIPs == nil {
		r.rule("nodeport-endpoints-check", noLocalhost, "meta l4proto . th dport vmap @"+mapNoEndpointNodePorts)
	} else {
		r.rule("nodeport-endpoints-check", ipX, "daddr @nodeport-ips meta l4proto . th dport vmap @"+mapNoEndpointNodePorts)
	}

	r.set(mapFirewallIPs, r.addrType+" . inet_proto . inet_service", "verdict", "destinations that are subject to LoadBalancerSourceRanges")
	r.rule("firewall-check", dispatch+mapFirewallIPs)

	r.set(mapServiceIPs, r.addrType+" . inet_proto . inet_service", "verdict", "ClusterIP, ExternalIP and LoadBalancer IP traffic")
	r.set(mapServiceNodePorts, "inet_proto . inet_service", "verdict", "NodePort traffic")
	switch {
	case r.s.legacy():
		// v1.33 masquerades ClusterIP traffic in each service's chain.
	case r.s.MasqueradeAll:
		r.rule("services", ipX, "daddr @cluster-ips", r.masquerade(), "comment", r.quote("masquerade all clusterIP traffic"))
	case r.s.localImplemented():
		r.rule("services", append(append([]string{ipX, "daddr @cluster-ips"}, r.notLocal()...), r.masquerade(), "comment", r.quote("masquerade clusterIP traffic from outside cluster"))...)
	}
	r.rule("services", dispatch+mapServiceIPs)
	if r.s.NodePortIPs == nil {
		r.rule("services", "fib daddr type local", noLocalhost, "meta l4proto . th dport vmap @"+mapServiceNodePorts)
	} else {
		r.rule("services", ipX, "daddr @nodeport-ips meta l4proto . th dport vmap @"+mapServiceNodePorts)
	}
}

// markMasq is v1.33's chain that marks a packet for masquerading.
const markMasq = "mark-for-masquerade"

// masquerade is the statement that marks a packet for masquerading.
func (r *renderer) masquerade() string {
	if r.s.legacy() {
		return "jump " + markMasq
	}
	return "meta mark set meta mark | " + r.s.mark()
}

// anonSet is a list of addresses or prefixes as nft lists it in a rule:
// a single one bare, several in braces. A prefix of the full length is
// listed as its address.
func anonSet(items []string) string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if p, err := netip.ParsePrefix(it); err == nil {
			if p.IsSingleIP() {
				it = p.Addr().String()
			} else {
				it = p.Masked().String()
			}
		}
		out = append(out, it)
	}
	if len(out) == 1 {
		return out[0]
	}
	return "{ " + strings.Join(out, ", ") + " }"
}
