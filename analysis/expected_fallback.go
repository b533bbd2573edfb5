package analysis

import (
	"net/netip"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// ipvsOutcome is a source's outcome at a frontend in ipvs mode, whose
// proxier differs from the iptables and nftables ones:
//   - a policy of Local with no local endpoint falls back to the cluster's
//     endpoints (which an internal-only Service has none of), instead of
//     dropping;
//   - a virtual server with no real server rejects (IPVS answers port
//     unreachable);
//   - external traffic (NodePort, external IP, load balancer) is
//     masqueraded for every source under policy Cluster and for none
//     under Local: the KUBE-NODE-PORT, KUBE-EXTERNAL-IP and
//     KUBE-LOAD-BALANCER sets decide it, not the source.
//
// A Service with no endpoints at all, and a source outside its load
// balancer's source ranges, are as in the other modes (see expectFrontend).
func ipvsOutcome(p *model.ServicePort, c behavior.SourceClass, src netip.Addr, det localDetector, external, masqAll bool, local localDelivery, memo backendMemo) behavior.Outcome {
	localPolicy, masq := p.InternalPolicyLocal, masqAll || (det.on() && det.notLocal(c, src))
	if external {
		localPolicy, masq = p.ExternalPolicyLocal, !p.ExternalPolicyLocal
	}
	eps := p.ClusterEndpoints
	if localPolicy && len(p.LocalEndpoints) > 0 {
		eps = p.LocalEndpoints
	}
	if len(eps) == 0 {
		return behavior.Outcome{Verdict: behavior.Reject, Reason: p.SPN() + " has no endpoint to send to on this node: its virtual server has no real server"}
	}
	return forward(eps, masq, local, memo)
}

// ipvsNodePortIPs are the addresses NodePorts open on in ipvs mode with
// nodePortAddresses unset: every address of the node but those on
// kube-ipvs0, which the plane lists (NodePortIPs), else the node's local
// addresses.
func (in ExpectedInput) ipvsNodePortIPs() ([]string, []string) {
	if in.NodePortIPsKnown {
		return in.NodePortIPs, nil
	}
	if len(in.LocalAddrs) > 0 {
		return in.LocalAddrs, nil
	}
	return nil, nil
}
