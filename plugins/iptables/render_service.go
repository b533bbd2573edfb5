package iptables

import (
	"strconv"

	"github.com/svctrace/svctrace/model"
)

// servicePort writes one service port's rules, as kube-proxy's iptables
// proxier does in its sync: the captures in the shared chains, then the
// port's own chains.
func (r *renderer) servicePort(p *model.ServicePort) {
	spn := p.SPN()
	proto := p.ProtoLower()
	hash := ServiceChainHash(spn, p.Protocol)
	svc, svl, ext, fw := PrefixSVC+hash, PrefixSVL+hash, PrefixEXT+hash, PrefixFW+hash
	hasEndpoints := p.HasAnyEndpoints
	usesCluster := len(p.ClusterEndpoints) > 0 && p.UsesClusterEndpoints()
	usesLocal := len(p.LocalEndpoints) > 0 && p.UsesLocalEndpoints()

	internalChain, hasInternal := svc, hasEndpoints
	if p.InternalPolicyLocal {
		internalChain = svl
		hasInternal = hasInternal && len(p.LocalEndpoints) > 0
	}
	externalPolicy, hasExternal := svc, hasEndpoints
	if p.ExternalPolicyLocal {
		externalPolicy = svl
		hasExternal = hasExternal && len(p.LocalEndpoints) > 0
	}
	usesExt := hasEndpoints && p.ExternallyAccessible
	lbChain := ext
	usesFW := hasEndpoints && len(p.LoadBalancerIPs) > 0 && len(p.LoadBalancerSourceRanges) > 0
	if usesFW {
		lbChain = fw
	}

	internalFilter, externalFilter, filterComment := "", "", ""
	if !hasEndpoints {
		internalFilter, externalFilter = r.reject(), r.reject()
		filterComment = spn + " has no endpoints"
	} else {
		filterComment = spn + " has no local endpoints"
		if !hasInternal {
			internalFilter = "DROP"
		}
		if !hasExternal {
			externalFilter = "DROP"
		}
	}
	capture := func(chain, addr string, port int32, comment string) *saveRule {
		return rule(chain).to(hostPrefix(addr, r.s.Family)).comment(comment).port(proto, port)
	}

	// The ClusterIP.
	if hasInternal {
		r.add(r.nat, capture("KUBE-SERVICES", p.ClusterIP, p.Port, spn+" cluster IP").target(internalChain))
	} else {
		r.add(r.filter, capture("KUBE-SERVICES", p.ClusterIP, p.Port, filterComment).target(internalFilter))
	}
	// External IPs.
	for _, ip := range p.ExternalIPs {
		if hasEndpoints {
			r.add(r.nat, capture("KUBE-SERVICES", ip, p.Port, spn+" external IP").target(ext))
		}
		if !hasExternal {
			r.add(r.filter, capture("KUBE-EXTERNAL-SERVICES", ip, p.Port, filterComment).target(externalFilter))
		}
	}
	// Load balancer VIPs.
	for _, ip := range p.LoadBalancerIPs {
		if hasEndpoints {
			r.add(r.nat, capture("KUBE-SERVICES", ip, p.Port, spn+" loadbalancer IP").target(lbChain))
		}
		if usesFW {
			r.add(r.filter, capture("KUBE-PROXY-FIREWALL", ip, p.Port, spn+" traffic not accepted by "+fw).target("DROP"))
		}
	}
	if !hasExternal {
		for _, ip := range p.LoadBalancerIPs {
			r.add(r.filter, capture("KUBE-EXTERNAL-SERVICES", ip, p.Port, filterComment).target(externalFilter))
		}
	}
	// The NodePort.
	if p.NodePort != 0 {
		if hasEndpoints {
			if r.s.LocalhostNodePorts && r.s.Family != "IPv6" && r.s.NFAcct {
				r.add(r.nat, rule("KUBE-NODEPORTS").to("127.0.0.0/8").comment(spn).port(proto, p.NodePort).
					nfacct("localhost_nps_accepted_pkts").target(ext))
			}
			r.add(r.nat, rule("KUBE-NODEPORTS").comment(spn).port(proto, p.NodePort).target(ext))
		}
		if !hasExternal {
			x := rule("KUBE-EXTERNAL-SERVICES").comment(filterComment).mod("addrtype --dst-type LOCAL")
			x.proto = proto
			r.add(r.filter, x.mod(proto+" --dport "+strconv.Itoa(int(p.NodePort))).target(externalFilter))
		}
	}
	if p.HealthCheckNodePort != 0 {
		r.add(r.filter, rule("KUBE-NODEPORTS").comment(spn+" health check node port").port("tcp", p.HealthCheckNodePort).target("ACCEPT"))
	}

	// Internal traffic: masquerade what does not come from a local pod.
	if hasInternal {
		x := capture(internalChain, p.ClusterIP, p.Port, spn+" cluster IP")
		switch {
		case r.s.MasqueradeAll:
			r.add(r.nat, x.target("KUBE-MARK-MASQ"))
		case r.s.Local.Implemented():
			r.add(r.nat, r.s.Local.apply(x, false).target("KUBE-MARK-MASQ"))
		}
	}
	if usesExt {
		declare(r.nat, ext)
		if !p.ExternalPolicyLocal {
			r.add(r.nat, rule(ext).comment("masquerade traffic for "+spn+" external destinations").target("KUBE-MARK-MASQ"))
		} else {
			if r.s.Local.Implemented() {
				r.add(r.nat, r.s.Local.apply(rule(ext), true).comment("pod traffic for "+spn+" external destinations").target(svc))
			}
			r.add(r.nat,
				rule(ext).comment("masquerade LOCAL traffic for "+spn+" external destinations").mod("addrtype --src-type LOCAL").target("KUBE-MARK-MASQ"),
				rule(ext).comment("route LOCAL traffic for "+spn+" external destinations").mod("addrtype --src-type LOCAL").target(svc))
		}
		if hasExternal {
			r.add(r.nat, rule(ext).target(externalPolicy))
		}
	}
	if usesFW {
		declare(r.nat, fw)
		allowFromNode := false
		for _, cidr := range p.LoadBalancerSourceRanges {
			r.add(r.nat, rule(fw).from(cidr).comment(spn+" loadbalancer IP").target(ext))
			if prefixHolds(cidr, r.s.NodeIP) {
				allowFromNode = true
			}
		}
		if allowFromNode {
			for _, ip := range p.LoadBalancerIPs {
				r.add(r.nat, rule(fw).from(hostPrefix(ip, r.s.Family)).comment(spn+" loadbalancer IP").target(ext))
			}
		}
		r.add(r.nat, rule(fw).comment("other traffic to "+spn+" will be dropped by KUBE-PROXY-FIREWALL"))
	}
	if usesCluster {
		r.dispatch(p, svc, p.ClusterEndpoints)
	}
	if usesLocal {
		r.dispatch(p, svl, p.LocalEndpoints)
	}
	for _, ep := range p.ReachableEndpoints() {
		sep := EndpointChain(spn, p.Protocol, ep.String())
		declare(r.nat, sep)
		masq := rule(sep).from(hostPrefix(ep.IP, r.s.Family))
		dnat := rule(sep)
		dnat.proto = proto
		if !r.large {
			masq.comment(spn)
			dnat.comment(spn)
		}
		if p.AffinityTimeoutSeconds > 0 {
			dnat.mod("recent --set --name " + sep + " --mask " + r.fullMask() + " --rsource")
		}
		r.add(r.nat, masq.target("KUBE-MARK-MASQ"), dnat.mod(proto).target("DNAT --to-destination "+ep.String()))
	}
}

// dispatch writes a policy chain's rules: the affinity checks, then one
// rule per endpoint, each taking its share of what the ones before left.
func (r *renderer) dispatch(p *model.ServicePort, chain string, eps []model.Endpoint) {
	declare(r.nat, chain)
	spn := p.SPN()
	if p.AffinityTimeoutSeconds > 0 {
		for _, ep := range eps {
			sep := EndpointChain(spn, p.Protocol, ep.String())
			x := rule(chain)
			if !r.large {
				x.comment(spn + " -> " + ep.String())
			}
			r.add(r.nat, x.mod("recent --rcheck --seconds "+strconv.Itoa(int(p.AffinityTimeoutSeconds))+" --reap --name "+sep+" --mask "+r.fullMask()+" --rsource").target(sep))
		}
	}
	for i, ep := range eps {
		sep := EndpointChain(spn, p.Protocol, ep.String())
		x := rule(chain)
		if !r.large {
			x.comment(spn + " -> " + ep.String())
		}
		if i < len(eps)-1 {
			x.mod("statistic --mode random --probability " + probability(len(eps)-i))
		}
		r.add(r.nat, x.target(sep))
	}
}

func (r *renderer) reject() string {
	if r.s.Family == "IPv6" {
		return "REJECT --reject-with icmp6-port-unreachable"
	}
	return "REJECT --reject-with icmp-port-unreachable"
}

// fullMask is the recent match's --mask for a whole address.
func (r *renderer) fullMask() string {
	if r.s.Family == "IPv6" {
		return "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	}
	return "255.255.255.255"
}
