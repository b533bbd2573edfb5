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
	proto, spn := p.ProtoLower(), p.SPN()
	if len(spn) > commentMax {
		// nft takes no longer comment: v1.37 cuts it (before, the
		// transaction failed and kube-proxy could not sync).
		spn = spn[:commentMax]
	}
	port := strconv.Itoa(int(p.Port))
	base := ServiceChainBase(p)
	clusterChain, localChain := prefixService+base, prefixLocal+base
	extChain, fwChain := prefixExternal+base, prefixFirewall+base
	affinity := p.AffinityTimeoutSeconds > 0
	reachable := p.ReachableEndpoints()

	legacy := r.s.legacy()
	for _, ep := range reachable {
		if affinity || legacy {
			r.chain(prefixEndpoint + EndpointChainBase(p, ep))
		}
		if ep.Local && !legacy {
			r.elem("hairpin-connections", []string{addr(ep.IP), addr(ep.IP), proto, strconv.Itoa(int(ep.Port))}, "", "")
		}
	}
	usesCluster := len(p.ClusterEndpoints) > 0 && p.UsesClusterEndpoints()
	if usesCluster {
		r.chain(clusterChain)
	}
	usesLocal := len(p.LocalEndpoints) > 0 && p.UsesLocalEndpoints()
	if usesLocal {
		r.chain(localChain)
	}

	hasEndpoints := p.HasAnyEndpoints
	internalChain, hasInternal := clusterChain, hasEndpoints
	if p.InternalPolicyLocal {
		internalChain = localChain
		hasInternal = hasInternal && len(p.LocalEndpoints) > 0
	}
	externalPolicyChain, hasExternal := clusterChain, hasEndpoints
	if p.ExternalPolicyLocal {
		externalPolicyChain = localChain
		hasExternal = hasExternal && len(p.LocalEndpoints) > 0
	}
	usesExt := hasEndpoints && p.ExternallyAccessible
	if usesExt {
		r.chain(extChain)
	}
	internalVerdict, externalVerdict := "", ""
	if !hasEndpoints {
		internalVerdict, externalVerdict = "goto reject-chain", "goto reject-chain"
	} else {
		if !hasInternal {
			internalVerdict = "drop"
		}
		if !hasExternal {
			externalVerdict = "drop"
		}
	}

	// Frontends.
	if p.ClusterIP != "" {
		cip := addr(p.ClusterIP)
		r.elem(setClusterIPs, []string{cip}, "", "")
		if hasInternal {
			r.elem(mapServiceIPs, []string{cip, proto, port}, "", "goto "+internalChain)
		} else {
			r.elem(mapNoEndpointServices, []string{cip, proto, port}, spn, internalVerdict)
		}
	}
	for _, ip := range p.ExternalIPs {
		key := []string{addr(ip), proto, port}
		if hasEndpoints {
			r.elem(mapServiceIPs, key, "", "goto "+extChain)
		}
		if !hasExternal {
			r.elem(mapNoEndpointServices, key, spn, externalVerdict)
		}
	}
	usesFW := len(p.LoadBalancerIPs) > 0 && len(p.LoadBalancerSourceRanges) > 0
	if usesFW {
		r.chain(fwChain)
	}
	for _, ip := range p.LoadBalancerIPs {
		key := []string{addr(ip), proto, port}
		if hasEndpoints {
			r.elem(mapServiceIPs, key, "", "goto "+extChain)
		}
		if usesFW {
			r.elem(mapFirewallIPs, key, "", "goto "+fwChain)
		}
	}
	if !hasExternal {
		for _, ip := range p.LoadBalancerIPs {
			r.elem(mapNoEndpointServices, []string{addr(ip), proto, port}, spn, externalVerdict)
		}
	}
	if p.NodePort != 0 {
		key := []string{proto, strconv.Itoa(int(p.NodePort))}
		if hasEndpoints {
			r.elem(mapServiceNodePorts, key, "", "goto "+extChain)
		}
		if !hasExternal {
			r.elem(mapNoEndpointNodePorts, key, spn, externalVerdict)
		}
	}

	// Chains.
	if legacy && hasInternal {
		r.internalMasquerade(p, internalChain)
	}
	if usesExt {
		r.externalChain(p, extChain, clusterChain, externalPolicyChain, hasExternal)
	}
	if usesFW {
		r.firewallChain(p, fwChain)
	}
	if affinity {
		for _, ep := range reachable {
			r.affinitySet(EndpointChainBase(p, ep), p.AffinityTimeoutSeconds)
		}
	}
	if !affinity && !legacy {
		if usesCluster {
			r.dnats(p, clusterChain, p.ClusterEndpoints)
		}
		if usesLocal {
			r.dnats(p, localChain, p.LocalEndpoints)
		}
		return
	}
	if usesCluster {
		r.jumps(p, clusterChain, p.ClusterEndpoints, affinity)
	}
	if usesLocal {
		r.jumps(p, localChain, p.LocalEndpoints, affinity)
	}
	for _, ep := range reachable {
		epBase := EndpointChainBase(p, ep)
		if legacy {
			// Hairpin traffic is masqueraded here, not by a set.
			r.rule(prefixEndpoint+epBase, r.ipX, "saddr", addr(ep.IP), r.masquerade())
		}
		if affinity {
			r.rule(prefixEndpoint+epBase, "update @"+prefixAffinity+epBase, "{", r.ipX, "saddr }")
		}
		r.rule(prefixEndpoint+epBase, "meta l4proto", proto, "dnat to", endpointAddr(ep))
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
