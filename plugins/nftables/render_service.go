package nftables

import (
	"crypto/sha256"
	"encoding/base32"
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/model"
)

// chainBaseMax is the longest base of a per-service chain or set name
// kube-proxy makes: nft's name limit (256) less the longest prefix (16).
const chainBaseMax = 256 - 16

// hashedBase is a name prefixed with the first 8 characters of the
// base32 of its sha256, "HASH8-name", cut to chainBaseMax with "...".
func hashedBase(name string) string {
	sum := sha256.Sum256([]byte(name))
	s := base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if len(s) > chainBaseMax {
		s = s[:chainBaseMax-3] + "..."
	}
	return s
}

// ServiceChainBase is the base of a service port's chain names:
// "HASH8-ns/name/proto/portName" (proto in lower case).
func ServiceChainBase(p *model.ServicePort) string {
	return hashedBase(p.Namespace + "/" + p.Name + "/" + p.ProtoLower() + "/" + p.PortName)
}

// EndpointChainBase is the base of an endpoint's chain and affinity set
// names: "HASH8-ns/name/proto/portName__IP/port", the colons of an IPv6
// address turned into dots.
func EndpointChainBase(p *model.ServicePort, ep model.Endpoint) string {
	ip := strings.ReplaceAll(ep.IP, ":", ".")
	return hashedBase(p.Namespace + "/" + p.Name + "/" + p.ProtoLower() + "/" + p.PortName +
		"__" + ip + "/" + strconv.Itoa(int(ep.Port)))
}

// addr is an address as nft lists it (IPv6 compressed).
func addr(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.Unmap().String()
	}
	return ip
}

// servicePort writes one service port's elements and chains, as
// syncProxyRules does in a full sync.
func (r *renderer) servicePort(p *model.ServicePort) {
	c := r.portChains(p)
	r.declareChains(c)
	r.frontends(c)
	if r.s.legacy() && c.pol.Internal.HasEndpoints {
		r.internalMasquerade(p, c.internalChain)
	}
	if c.usesExt {
		r.externalChain(p, c.ext, c.cluster, c.externalPolicy, c.pol.External.HasEndpoints)
	}
	if c.usesFW {
		r.firewallChain(p, c.fw)
	}
	r.policyChains(c)
}

// declareChains makes the port's chains exist, before any element refers
// to them, and adds its local endpoints' hairpin elements.
func (r *renderer) declareChains(c *portChains) {
	p, legacy := c.p, r.s.legacy()
	for _, ep := range c.reachable {
		if c.affinity || legacy {
			r.chain(prefixEndpoint + EndpointChainBase(p, ep))
		}
		if ep.Local && !legacy {
			r.elem("hairpin-connections", []string{addr(ep.IP), addr(ep.IP), c.proto, strconv.Itoa(int(ep.Port))}, "", "")
		}
	}
	if c.pol.UsesCluster {
		r.chain(c.cluster)
	}
	if c.pol.UsesLocal {
		r.chain(c.local)
	}
	if c.usesExt {
		r.chain(c.ext)
	}
}

// frontends writes the port's elements in the shared maps: its ClusterIP,
// external IPs, load balancer VIPs and NodePort lead to its chains when
// it has endpoints, to a drop or reject when not.
func (r *renderer) frontends(c *portChains) {
	p, proto, port, spn := c.p, c.proto, c.port, c.spn
	hasEndpoints, hasExternal := p.HasAnyEndpoints, c.pol.External.HasEndpoints
	if p.ClusterIP != "" {
		cip := addr(p.ClusterIP)
		r.elem(setClusterIPs, []string{cip}, "", "")
		if c.pol.Internal.HasEndpoints {
			r.elem(mapServiceIPs, []string{cip, proto, port}, "", "goto "+c.internalChain)
		} else {
			r.elem(mapNoEndpointServices, []string{cip, proto, port}, spn, c.internalVerdict)
		}
	}
	for _, ip := range p.ExternalIPs {
		key := []string{addr(ip), proto, port}
		if hasEndpoints {
			r.elem(mapServiceIPs, key, "", "goto "+c.ext)
		}
		if !hasExternal {
			r.elem(mapNoEndpointServices, key, spn, c.externalVerdict)
		}
	}
	if c.usesFW {
		r.chain(c.fw)
	}
	for _, ip := range p.LoadBalancerIPs {
		key := []string{addr(ip), proto, port}
		if hasEndpoints {
			r.elem(mapServiceIPs, key, "", "goto "+c.ext)
		}
		if c.usesFW {
			r.elem(mapFirewallIPs, key, "", "goto "+c.fw)
		}
	}
	if !hasExternal {
		for _, ip := range p.LoadBalancerIPs {
			r.elem(mapNoEndpointServices, []string{addr(ip), proto, port}, spn, c.externalVerdict)
		}
	}
	if p.NodePort != 0 {
		key := []string{proto, strconv.Itoa(int(p.NodePort))}
		if hasEndpoints {
			r.elem(mapServiceNodePorts, key, "", "goto "+c.ext)
		}
		if !hasExternal {
			r.elem(mapNoEndpointNodePorts, key, spn, c.externalVerdict)
		}
	}
}

// internalMasquerade is the first rule of v1.31 to v1.35 in the chain
// ClusterIP traffic goes to: it marks traffic to the ClusterIP for
// masquerading, all of it or what does not come from a local pod.
func (r *renderer) internalMasquerade(p *model.ServicePort, chain string) {
	match := []string{r.ipX, "daddr", addr(p.ClusterIP)}
	if r.s.clusterIPMasqueradePort() {
		match = append(match, p.ProtoLower(), "dport", strconv.Itoa(int(p.Port)))
	}
	switch {
	case r.s.MasqueradeAll:
	case r.s.localImplemented():
		match = append(match, r.notLocal()...)
	default:
		return
	}
	r.rule(chain, append(match, r.masquerade())...)
}

// externalChain writes the chain external traffic (NodePorts, external
// IPs, load balancer VIPs) goes through.
func (r *renderer) externalChain(p *model.ServicePort, ext, cluster, policy string, hasExternal bool) {
	switch {
	case !p.ExternalPolicyLocal && r.s.legacy():
		r.rule(ext, r.masquerade())
	case !p.ExternalPolicyLocal:
		r.rule(ext, r.masquerade(), "comment", r.quote("masquerade"))
	default:
		if r.s.localImplemented() {
			r.rule(ext, append(r.isLocal(), "goto", cluster, "comment", r.quote("short-circuit pod traffic"))...)
		}
		r.rule(ext, "fib saddr type local", r.masquerade(), "comment", r.quote("masquerade local traffic"))
		r.rule(ext, "fib saddr type local goto", cluster, "comment", r.quote("short-circuit local traffic"))
	}
	if hasExternal {
		r.rule(ext, "goto", policy)
	}
}

// firewallChain writes the chain that drops traffic to a load balancer
// VIP from outside its source ranges; the ranges admit the VIPs too when
// one holds the node's address.
func (r *renderer) firewallChain(p *model.ServicePort, fw string) {
	sources := append([]string(nil), p.LoadBalancerSourceRanges...)
	node, nodeErr := netip.ParseAddr(r.s.NodeIP)
	fromNode := false
	for _, c := range p.LoadBalancerSourceRanges {
		if pfx, err := netip.ParsePrefix(c); err == nil && nodeErr == nil && pfx.Contains(node) {
			fromNode = true
		}
	}
	if fromNode {
		for _, ip := range p.LoadBalancerIPs {
			sources = append(sources, addr(ip))
		}
	}
	r.rule(fw, r.ipX, "saddr !=", anonSet(sources), "drop")
}

// affinitySet declares an endpoint's ClientIP affinity set. nft lists
// the set's "dynamic" flag only in its text form, not in its JSON, and
// gives a set the packet path updates a size of 65535.
func (r *renderer) affinitySet(epBase string, timeout int32) {
	r.l.Sets[prefixAffinity+epBase] = &LayoutSet{KeyType: []string{r.addrType}, Flags: []string{"timeout"},
		Timeout: int64(timeout), Size: 65535}
}

// commentMax is the longest comment nft takes, in bytes.
const commentMax = 128

// dnats writes a policy chain without affinity: one DNAT through a
// random number map to the endpoints, or from v1.37 straight to the
// endpoint when there is one.
func (r *renderer) dnats(p *model.ServicePort, chain string, eps []model.Endpoint) {
	if len(eps) == 1 && r.s.singleDNAT() {
		r.rule(chain, "meta l4proto", p.ProtoLower(), "dnat to", endpointAddr(eps[0]))
		return
	}
	elems := make([]string, 0, len(eps))
	for i, ep := range eps {
		elems = append(elems, strconv.Itoa(i)+" : "+addr(ep.IP)+" . "+strconv.Itoa(int(ep.Port)))
	}
	r.rule(chain, "meta l4proto", p.ProtoLower(), "dnat", r.ipX, "to numgen random mod", strconv.Itoa(len(eps)),
		"map { "+strings.Join(elems, ", ")+" }")
}

// jumps writes a policy chain that goes to endpoint chains: with
// affinity, first a jump to the endpoint a source is remembered for;
// then a random pick of the endpoints.
func (r *renderer) jumps(p *model.ServicePort, chain string, eps []model.Endpoint, affinity bool) {
	elems := make([]string, 0, len(eps))
	for i, ep := range eps {
		epBase := EndpointChainBase(p, ep)
		if affinity {
			r.rule(chain, r.ipX, "saddr @"+prefixAffinity+epBase, "goto", prefixEndpoint+epBase)
		}
		elems = append(elems, strconv.Itoa(i)+" : goto "+prefixEndpoint+epBase)
	}
	r.rule(chain, "numgen random mod", strconv.Itoa(len(eps)), "vmap { "+strings.Join(elems, ", ")+" }")
}

// endpointAddr is an endpoint's address and port as nft lists a DNAT
// target, as NAT.String gives it back: "10.244.1.5:8080", and for IPv6
// "fd00::5:8080" (it writes no brackets).
func endpointAddr(ep model.Endpoint) string {
	return addr(ep.IP) + ":" + strconv.Itoa(int(ep.Port))
}
