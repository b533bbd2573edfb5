package iptables

import "github.com/svctrace/svctrace/model"

// portChains is what one service port's rules are written from: its
// chain names, and where its traffic policies send its traffic.
type portChains struct {
	p          *model.ServicePort
	spn, proto string
	// svc and svl are the cluster and local policy chains, ext the chain
	// external traffic goes through, fw the load balancer firewall.
	svc, svl, ext, fw string
	pol               model.TrafficPolicies
	// internalChain and externalPolicy are the policy chains ClusterIP
	// and external traffic go to.
	internalChain, externalPolicy string
	// usesExt and usesFW: the port has an EXT and a FW chain.
	usesExt, usesFW bool
	// internalFilter and externalFilter are the filter table's verdicts
	// for traffic a policy has no endpoint for, with filterComment.
	internalFilter, externalFilter, filterComment string
}

// portChains works out a port's chains from its traffic policies.
func (r *renderer) portChains(p *model.ServicePort) *portChains {
	spn := p.SPN()
	hash := ServiceChainHash(spn, p.Protocol)
	c := &portChains{
		p: p, spn: spn, proto: p.ProtoLower(),
		svc: PrefixSVC + hash, svl: PrefixSVL + hash, ext: PrefixEXT + hash, fw: PrefixFW + hash,
		pol:     p.TrafficPolicies(),
		usesExt: p.HasAnyEndpoints && p.ExternallyAccessible,
		usesFW:  p.HasAnyEndpoints && len(p.LoadBalancerIPs) > 0 && len(p.LoadBalancerSourceRanges) > 0,
	}
	c.internalChain = c.pol.Internal.Chain(c.svc, c.svl)
	c.externalPolicy = c.pol.External.Chain(c.svc, c.svl)
	// Without any endpoint the traffic is rejected; with endpoints, none
	// of them local, it is dropped.
	if !p.HasAnyEndpoints {
		c.internalFilter, c.externalFilter = r.reject(), r.reject()
		c.filterComment = spn + " has no endpoints"
		return c
	}
	c.filterComment = spn + " has no local endpoints"
	if !c.pol.Internal.HasEndpoints {
		c.internalFilter = "DROP"
	}
	if !c.pol.External.HasEndpoints {
		c.externalFilter = "DROP"
	}
	return c
}

// lbChain is where load balancer VIP traffic goes: through the firewall
// when the port has source ranges.
func (c *portChains) lbChain() string {
	if c.usesFW {
		return c.fw
	}
	return c.ext
}
