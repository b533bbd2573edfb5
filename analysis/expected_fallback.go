package analysis

import (
	"net/netip"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// fallbackOutcome is a source's outcome at a frontend for a proxier whose
// Local policy falls back to the cluster's endpoints (the traits' plane
// declares it: ipvs mode):
//   - a policy of Local with no local endpoint sends to the cluster's
//     endpoints (which an internal-only Service has none of), instead of
//     dropping;
//   - a frontend with nothing to send to is answered as the traits say
//     (ipvs: the virtual server rejects, port unreachable);
//   - with ExternalMasqueradeByPolicy, external traffic (NodePort,
//     external IP, load balancer) is masqueraded from every source under
//     policy Cluster and from none under Local.
//
// A Service with no endpoints at all, and a source outside its load
// balancer's source ranges, are as in the other modes (see expectFrontend).
func fallbackOutcome(p *model.ServicePort, c behavior.SourceClass, src netip.Addr, det localDetector, external bool, rules expectRules, local localDelivery, memo backendMemo) behavior.Outcome {
	localPolicy, masq := p.InternalPolicyLocal, rules.masqAll || (det.on() && det.notLocal(c, src))
	if external {
		localPolicy = p.ExternalPolicyLocal
		if rules.traits.ExternalMasqueradeByPolicy {
			masq = !p.ExternalPolicyLocal
		}
	}
	eps := p.ClusterEndpoints
	if localPolicy && len(p.LocalEndpoints) > 0 {
		eps = p.LocalEndpoints
	}
	if len(eps) == 0 {
		reason := p.SPN() + " has no endpoint to send to on this node"
		if rules.traits.EmptyFrontend != "" {
			reason += ": " + rules.traits.EmptyFrontend
		}
		return behavior.Outcome{Verdict: behavior.Reject, Reason: reason}
	}
	return forward(eps, masq, local, memo)
}

// listedNodePortIPs are the addresses NodePorts open on, with
// nodePortAddresses unset, for a mode whose plane lists them (ipvs mode:
// every address of the node but those on kube-ipvs0); else the node's
// local addresses.
func (in ExpectedInput) listedNodePortIPs() ([]string, []string) {
	if in.NodePortIPsKnown {
		return in.NodePortIPs, nil
	}
	if len(in.LocalAddrs) > 0 {
		return in.LocalAddrs, nil
	}
	return nil, nil
}
