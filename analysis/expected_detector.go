package analysis

import (
	"net/netip"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// localDetector is kube-proxy's local-traffic detector, as the expected
// table asks it whether a probe is from a local pod.
type localDetector struct {
	// cidrs are the ClusterCIDR or NodeCIDR detector's ranges.
	cidrs []netip.Prefix
	// iface: the detector goes by input interface (BridgeInterface,
	// InterfaceNamePrefix), whatever the CIDRs: a pod on the node comes
	// in on it, and nothing else does. The node's own packets have no
	// input interface: iptables' "! -i" takes them as not local, and
	// nftables' iifname match does not match them at all (skipsNode,
	// which the mode's traits give, tells which).
	iface, skipsNode bool
}

func newLocalDetector(cfg snapshot.ProxyConfig, traits model.ProxierTraits, cidrs []netip.Prefix) localDetector {
	return localDetector{cidrs: cidrs, iface: podIface(cfg) != "", skipsNode: traits.InterfaceMatchSkipsNode}
}

// on reports whether kube-proxy writes the detector's rules at all.
func (d localDetector) on() bool { return d.iface || len(d.cidrs) > 0 }

// notLocal reports whether the detector's "not local" match takes a
// packet of the class from src: it is then masqueraded to a ClusterIP.
func (d localDetector) notLocal(c behavior.SourceClass, src netip.Addr) bool {
	if d.iface {
		return c == behavior.FromExternal || c == behavior.FromNode && !d.skipsNode
	}
	return !inPrefixes(src, d.cidrs)
}
