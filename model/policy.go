package model

// TrafficPolicies is what a service port's internal and external traffic
// policies choose. Every proxier decides it the same way (kube-proxy's
// iptables and nftables syncProxyRules), so the renders of both planes
// read it from here rather than each working it out.
type TrafficPolicies struct {
	// Internal is where ClusterIP traffic goes; External where NodePort,
	// external IP and load balancer traffic goes.
	Internal, External PolicyTarget
	// UsesCluster and UsesLocal: the cluster-wide and the node-local
	// policy chains exist, since some traffic takes them and they have
	// endpoints to send it to.
	UsesCluster, UsesLocal bool
}

// PolicyTarget is where one traffic policy sends traffic.
type PolicyTarget struct {
	// Local: the policy is Local, so traffic goes only to the endpoints
	// on this node (the local policy chain), not to the cluster-wide set.
	Local bool
	// HasEndpoints: the policy has endpoints to send traffic to. Without,
	// the traffic is dropped, or rejected when the Service has no usable
	// endpoint anywhere.
	HasEndpoints bool
}

// Chain is the policy chain the traffic goes to, of the port's cluster
// and local policy chains.
func (t PolicyTarget) Chain(cluster, local string) string {
	if t.Local {
		return local
	}
	return cluster
}

// TrafficPolicies is what the port's traffic policies choose.
func (p *ServicePort) TrafficPolicies() TrafficPolicies {
	return TrafficPolicies{
		Internal:    p.policyTarget(p.InternalPolicyLocal),
		External:    p.policyTarget(p.ExternalPolicyLocal),
		UsesCluster: len(p.ClusterEndpoints) > 0 && p.UsesClusterEndpoints(),
		UsesLocal:   len(p.LocalEndpoints) > 0 && p.UsesLocalEndpoints(),
	}
}

// policyTarget is where a policy, Local or Cluster, sends the port's
// traffic: a Local policy has only the node's endpoints.
func (p *ServicePort) policyTarget(local bool) PolicyTarget {
	return PolicyTarget{
		Local:        local,
		HasEndpoints: p.HasAnyEndpoints && (!local || len(p.LocalEndpoints) > 0),
	}
}
