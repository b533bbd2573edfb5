package iptables

import (
	"strconv"

	"github.com/svctrace/svctrace/model"
)

// servicePort writes one service port's rules, as kube-proxy's iptables
// proxier does in its sync: the captures in the shared chains, then the
// port's own chains.
func (r *renderer) servicePort(p *model.ServicePort) {
	c := r.portChains(p)
	r.captures(c)
	r.nodePortCaptures(c)
	r.internalMasquerade(c)
	if c.usesExt {
		r.externalChain(c)
	}
	if c.usesFW {
		r.firewallChain(c)
	}
	if c.pol.UsesCluster {
		r.dispatch(p, c.svc, p.ClusterEndpoints)
	}
	if c.pol.UsesLocal {
		r.dispatch(p, c.svl, p.LocalEndpoints)
	}
	r.endpointChains(p)
}

// capture is a rule of a shared chain that catches the port's traffic to
// one address.
func (r *renderer) capture(c *portChains, chain, addr string, port int32, comment string) *saveRule {
	return rule(chain).to(hostPrefix(addr, r.s.Family)).comment(comment).port(c.proto, port)
}

// captures writes the port's rules in the shared chains for its ClusterIP,
// external IPs and load balancer VIPs: to its chains when it has
// endpoints, to a drop or reject in the filter table when not.
func (r *renderer) captures(c *portChains) {
	p, spn := c.p, c.spn
	hasEndpoints, hasInternal, hasExternal := p.HasAnyEndpoints, c.pol.Internal.HasEndpoints, c.pol.External.HasEndpoints
	// The ClusterIP.
	if hasInternal {
		r.add(r.nat, r.capture(c, "KUBE-SERVICES", p.ClusterIP, p.Port, spn+" cluster IP").target(c.internalChain))
	} else {
		r.add(r.filter, r.capture(c, "KUBE-SERVICES", p.ClusterIP, p.Port, c.filterComment).target(c.internalFilter))
	}
	// External IPs.
	for _, ip := range p.ExternalIPs {
		if hasEndpoints {
			r.add(r.nat, r.capture(c, "KUBE-SERVICES", ip, p.Port, spn+" external IP").target(c.ext))
		}
		if !hasExternal {
			r.add(r.filter, r.capture(c, "KUBE-EXTERNAL-SERVICES", ip, p.Port, c.filterComment).target(c.externalFilter))
		}
	}
	// Load balancer VIPs.
	for _, ip := range p.LoadBalancerIPs {
		if hasEndpoints {
			r.add(r.nat, r.capture(c, "KUBE-SERVICES", ip, p.Port, spn+" loadbalancer IP").target(c.lbChain()))
		}
		if c.usesFW {
			r.add(r.filter, r.capture(c, "KUBE-PROXY-FIREWALL", ip, p.Port, spn+" traffic not accepted by "+c.fw).target("DROP"))
		}
	}
	if !hasExternal {
		for _, ip := range p.LoadBalancerIPs {
			r.add(r.filter, r.capture(c, "KUBE-EXTERNAL-SERVICES", ip, p.Port, c.filterComment).target(c.externalFilter))
		}
	}
}

// nodePortCaptures writes the port's rules for its NodePort and its
// health check node port.
func (r *renderer) nodePortCaptures(c *portChains) {
	p, spn, proto := c.p, c.spn, c.proto
	if p.NodePort != 0 {
		if p.HasAnyEndpoints {
			if r.s.LocalhostNodePorts && r.s.Family != "IPv6" && r.s.NFAcct {
				r.add(r.nat, rule("KUBE-NODEPORTS").to("127.0.0.0/8").comment(spn).port(proto, p.NodePort).
					nfacct("localhost_nps_accepted_pkts").target(c.ext))
			}
			r.add(r.nat, rule("KUBE-NODEPORTS").comment(spn).port(proto, p.NodePort).target(c.ext))
		}
		if !c.pol.External.HasEndpoints {
			x := rule("KUBE-EXTERNAL-SERVICES").comment(c.filterComment).mod("addrtype --dst-type LOCAL")
			x.proto = proto
			r.add(r.filter, x.mod(proto+" --dport "+strconv.Itoa(int(p.NodePort))).target(c.externalFilter))
		}
	}
	if p.HealthCheckNodePort != 0 {
		r.add(r.filter, rule("KUBE-NODEPORTS").comment(spn+" health check node port").port("tcp", p.HealthCheckNodePort).target("ACCEPT"))
	}
}

// internalMasquerade writes the first rule of the chain ClusterIP traffic
// goes to: it masquerades what does not come from a local pod (or all of
// it).
func (r *renderer) internalMasquerade(c *portChains) {
	if !c.pol.Internal.HasEndpoints {
		return
	}
	x := r.capture(c, c.internalChain, c.p.ClusterIP, c.p.Port, c.spn+" cluster IP")
	switch {
	case r.s.MasqueradeAll:
		r.add(r.nat, x.target("KUBE-MARK-MASQ"))
	case r.s.Local.Implemented():
		r.add(r.nat, r.s.Local.apply(x, false).target("KUBE-MARK-MASQ"))
	}
}

// externalChain writes the EXT chain external traffic (NodePorts,
// external IPs, load balancer VIPs) goes through: masquerading, then the
// external policy's chain.
func (r *renderer) externalChain(c *portChains) {
	ext, spn := c.ext, c.spn
	declare(r.nat, ext)
	if !c.p.ExternalPolicyLocal {
		r.add(r.nat, rule(ext).comment("masquerade traffic for "+spn+" external destinations").target("KUBE-MARK-MASQ"))
	} else {
		// Traffic from pods and from the node itself is short-circuited
		// to the cluster chain.
		if r.s.Local.Implemented() {
			r.add(r.nat, r.s.Local.apply(rule(ext), true).comment("pod traffic for "+spn+" external destinations").target(c.svc))
		}
		r.add(r.nat,
			rule(ext).comment("masquerade LOCAL traffic for "+spn+" external destinations").mod("addrtype --src-type LOCAL").target("KUBE-MARK-MASQ"),
			rule(ext).comment("route LOCAL traffic for "+spn+" external destinations").mod("addrtype --src-type LOCAL").target(c.svc))
	}
	if c.pol.External.HasEndpoints {
		r.add(r.nat, rule(ext).target(c.externalPolicy))
	}
}

// firewallChain writes the FW chain that lets load balancer traffic from
// the source ranges on to the EXT chain; the VIPs themselves count as a
// source when a range holds the node's address.
func (r *renderer) firewallChain(c *portChains) {
	fw, spn := c.fw, c.spn
	declare(r.nat, fw)
	allowFromNode := false
	for _, cidr := range c.p.LoadBalancerSourceRanges {
		r.add(r.nat, rule(fw).from(cidr).comment(spn+" loadbalancer IP").target(c.ext))
		if prefixHolds(cidr, r.s.NodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, ip := range c.p.LoadBalancerIPs {
			r.add(r.nat, rule(fw).from(hostPrefix(ip, r.s.Family)).comment(spn+" loadbalancer IP").target(c.ext))
		}
	}
	r.add(r.nat, rule(fw).comment("other traffic to "+spn+" will be dropped by KUBE-PROXY-FIREWALL"))
}

// endpointChains writes one SEP chain per endpoint the port's traffic can
// reach: masquerade hairpin traffic, then DNAT to the endpoint.
func (r *renderer) endpointChains(p *model.ServicePort) {
	spn, proto := p.SPN(), p.ProtoLower()
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
