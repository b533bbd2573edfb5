package nftables

import (
	"strconv"

	"github.com/svctrace/svctrace/model"
)

// portChains is what one service port's elements and chains are written
// from: its names, and where its traffic policies send its traffic.
type portChains struct {
	p                *model.ServicePort
	proto, spn, port string
	// cluster and local are the policy chains, ext the chain external
	// traffic goes through, fw the load balancer firewall.
	cluster, local, ext, fw string
	pol                     model.TrafficPolicies
	// internalChain and externalPolicy are the policy chains ClusterIP
	// and external traffic go to.
	internalChain, externalPolicy string
	// usesExt and usesFW: the port has an external and a firewall chain;
	// affinity: ClientIP affinity.
	usesExt, usesFW, affinity bool
	// reachable are the endpoints any policy sends traffic to.
	reachable []model.Endpoint
	// internalVerdict and externalVerdict are the no-endpoint maps'
	// verdicts for traffic a policy has no endpoint for.
	internalVerdict, externalVerdict string
}

// portChains works out a port's chains from its traffic policies.
func (r *renderer) portChains(p *model.ServicePort) *portChains {
	spn := p.SPN()
	if len(spn) > commentMax {
		// nft takes no longer comment: v1.37 cuts it (before, the
		// transaction failed and kube-proxy could not sync).
		spn = spn[:commentMax]
	}
	base := ServiceChainBase(p)
	c := &portChains{
		p: p, proto: p.ProtoLower(), spn: spn, port: strconv.Itoa(int(p.Port)),
		cluster: prefixService + base, local: prefixLocal + base,
		ext: prefixExternal + base, fw: prefixFirewall + base,
		pol:       p.TrafficPolicies(),
		usesExt:   p.HasAnyEndpoints && p.ExternallyAccessible,
		usesFW:    len(p.LoadBalancerIPs) > 0 && len(p.LoadBalancerSourceRanges) > 0,
		affinity:  p.AffinityTimeoutSeconds > 0,
		reachable: p.ReachableEndpoints(),
	}
	c.internalChain = c.pol.Internal.Chain(c.cluster, c.local)
	c.externalPolicy = c.pol.External.Chain(c.cluster, c.local)
	// Without any endpoint the traffic is rejected; with endpoints, none
	// of them local, it is dropped.
	if !p.HasAnyEndpoints {
		c.internalVerdict, c.externalVerdict = "goto reject-chain", "goto reject-chain"
		return c
	}
	if !c.pol.Internal.HasEndpoints {
		c.internalVerdict = "drop"
	}
	if !c.pol.External.HasEndpoints {
		c.externalVerdict = "drop"
	}
	return c
}

// policyChains writes the policy chains and the endpoint chains behind
// them: a DNAT straight from the policy chain where kube-proxy does
// without endpoint chains (no affinity, v1.36 on), jumps to endpoint
// chains otherwise.
func (r *renderer) policyChains(c *portChains) {
	p, legacy := c.p, r.s.legacy()
	if c.affinity {
		for _, ep := range c.reachable {
			r.affinitySet(EndpointChainBase(p, ep), p.AffinityTimeoutSeconds)
		}
	}
	if !c.affinity && !legacy {
		if c.pol.UsesCluster {
			r.dnats(p, c.cluster, p.ClusterEndpoints)
		}
		if c.pol.UsesLocal {
			r.dnats(p, c.local, p.LocalEndpoints)
		}
		return
	}
	if c.pol.UsesCluster {
		r.jumps(p, c.cluster, p.ClusterEndpoints, c.affinity)
	}
	if c.pol.UsesLocal {
		r.jumps(p, c.local, p.LocalEndpoints, c.affinity)
	}
	for _, ep := range c.reachable {
		epBase := EndpointChainBase(p, ep)
		if legacy {
			// Hairpin traffic is masqueraded here, not by a set.
			r.rule(prefixEndpoint+epBase, r.ipX, "saddr", addr(ep.IP), r.masquerade())
		}
		if c.affinity {
			r.rule(prefixEndpoint+epBase, "update @"+prefixAffinity+epBase, "{", r.ipX, "saddr }")
		}
		r.rule(prefixEndpoint+epBase, "meta l4proto", c.proto, "dnat to", endpointAddr(ep))
	}
}
