package ipvs

import "github.com/svctrace/svctrace/model"

// Traits: ipvs mode's proxier differs from the iptables and nftables
// ones. A Local policy with no local endpoint falls back to the
// cluster's endpoints instead of dropping; a virtual server with no real
// server rejects (IPVS answers port unreachable); external traffic is
// masqueraded by the policy (the KUBE-NODE-PORT, KUBE-EXTERNAL-IP and
// KUBE-LOAD-BALANCER sets decide it), not by the source; and NodePorts
// open on every address but kube-ipvs0's, which the plane lists.
func (Loader) Traits() model.ProxierTraits {
	return model.ProxierTraits{
		Mode:                       Loader{}.Mode(),
		NodePortsListedByPlane:     true,
		LocalFallback:              true,
		EmptyFrontend:              "its IPVS virtual server has no real server",
		ExternalMasqueradeByPolicy: true,
	}
}
