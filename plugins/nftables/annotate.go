package nftables

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// serviceChainPrefixes begin the names of kube-proxy's per-service chains.
var serviceChainPrefixes = []string{"service-", "external-", "local-", "firewall-", "endpoint-"}

// Describe tells what a hop is for readers that know no nftables: the rule
// as shown (table, chain, rule, the element it matched), its Service and
// endpoint (kube-proxy's chain names and map elements carry them) and
// whether it is shared plumbing (not a per-service chain, no element of
// the Service).
func (p *Plane) Describe(h dataplane.Hop) dataplane.HopInfo {
	if h.IsPolicy {
		return dataplane.HopInfo{Shared: true} // a chain's policy is no Service's
	}
	d := dataplane.HopInfo{Text: h.Table + " " + h.Chain + ": " + h.Rule, Endpoint: endpointOf(h)}
	if h.Element != "" {
		d.Text += "  [" + h.Element + "]"
	}
	d.Shared = h.Element == "" && !perService(h.Chain)
	if spn, _, ok := SPNFromName(h.Chain); ok {
		d.Service = spn
	}
	return d
}

func perService(chain string) bool {
	for _, p := range serviceChainPrefixes {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// OwnsRule reports whether a rule is in one of the per-service chains of
// the Service ports spns (kube-proxy names them after the port).
func (p *Plane) OwnsRule(r behavior.Rule, spns []string) bool {
	spn, _, ok := SPNFromName(r.Chain)
	for _, s := range spns {
		if r.Service == s || ok && spn == s {
			return true
		}
	}
	return false
}

// endpointOf is the endpoint a hop is one endpoint's hop of: its chain
// (endpoint-HASH-ns/name/proto/port__10.244.1.10/8080) or the element of a
// numgen map it picked ("0 : 10.244.1.10 . 8080").
func endpointOf(h dataplane.Hop) string {
	if strings.HasPrefix(h.Chain, prefixEndpoint) {
		if _, ep, ok := strings.Cut(h.Chain, "__"); ok {
			if i := strings.LastIndex(ep, "/"); i > 0 {
				return hostPort(ep[:i], ep[i+1:])
			}
		}
	}
	if _, v, ok := strings.Cut(h.Element, " : "); ok {
		if ip, port, ok := strings.Cut(v, " . "); ok {
			return hostPort(ip, port)
		}
	}
	return ""
}

// hostPort joins an address and a port ("" unless both read).
func hostPort(ip, port string) string {
	a, err := netip.ParseAddr(ip)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return ""
	}
	return netip.AddrPortFrom(a, uint16(p)).String()
}
