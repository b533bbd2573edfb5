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

// annotated describes every hop of its walker's branches for readers that
// know no nftables: the rule as shown (table, chain, rule, the element it
// matched), its Service (kube-proxy's chain names carry it) and whether it
// is shared plumbing (not a per-service chain, no element of the Service).
type annotated struct{ w dataplane.Walker }

func (a annotated) Walk(p dataplane.Packet) []dataplane.Branch {
	br := a.w.Walk(p)
	for i := range br {
		for j := range br[i].Hops {
			describe(&br[i].Hops[j])
		}
	}
	return br
}

func describe(h *dataplane.Hop) {
	if h.IsPolicy {
		h.Shared = true // a chain's policy is no Service's
		return
	}
	h.Text = h.Table + " " + h.Chain + ": " + h.Rule
	if h.Element != "" {
		h.Text += "  [" + h.Element + "]"
	}
	h.Shared = h.Element == "" && !perService(h.Chain)
	if spn, _, ok := SPNFromName(h.Chain); ok {
		h.Service = spn
	}
	h.Endpoint = endpointOf(h)
}

// endpointOf is the endpoint a hop is one endpoint's hop of: its chain
// (endpoint-HASH-ns/name/proto/port__10.244.1.10/8080) or the element of a
// numgen map it picked ("0 : 10.244.1.10 . 8080").
func endpointOf(h *dataplane.Hop) string {
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
