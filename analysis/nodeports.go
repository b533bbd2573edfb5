package analysis

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// nodePortCIDRs is nodePortAddresses as kube-proxy reads it for one IP
// family: the keywords expanded ("primary" to the node's first address of
// the family, "localhost" to the loopback range, "all" to every address),
// the other family's ranges left out. With no range of the family left, or
// one that holds every address, it accepts NodePorts on every address
// (all).
func nodePortCIDRs(spec []string, family string, nodeIPs []string) (cidrs []netip.Prefix, all bool) {
	v6 := family == "IPv6"
	for _, s := range spec {
		switch s {
		case "primary":
			if len(nodeIPs) > 0 {
				if a, err := netip.ParseAddr(nodeIPs[0]); err == nil && !a.IsLoopback() {
					cidrs = append(cidrs, netip.PrefixFrom(a, a.BitLen()))
				}
			}
		case "localhost":
			if v6 {
				cidrs = append(cidrs, netip.MustParsePrefix("::1/128"))
			} else {
				cidrs = append(cidrs, netip.MustParsePrefix("127.0.0.0/8"))
			}
		case "all":
			return nil, true
		default:
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Is6() != v6 {
				continue
			}
			if p.Bits() == 0 {
				return nil, true
			}
			cidrs = append(cidrs, p.Masked())
		}
	}
	return cidrs, len(cidrs) == 0
}

// givenNodePortCIDRs are the ranges of the family written in
// nodePortAddresses, keywords left out: what someone chose by hand.
func givenNodePortCIDRs(spec []string, family string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range spec {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is6() == (family == "IPv6") && p.Bits() > 0 {
			out = append(out, p.Masked())
		}
	}
	return out
}

// nodePortChecks hold nodePortAddresses against the node's addresses: a
// range written by hand that holds none of them (a subnet of another site,
// a typo) leaves every NodePort of the node unanswered, and kube-proxy's
// rules agree with its settings, so no behaviour differs. Keywords
// ("primary", "localhost") are kube-proxy's own resolution and never a
// contradiction; a range that holds only a loopback or another local
// address is a choice. local are the node's local addresses, nil when
// unknown (an import): then the Node object's addresses decide.
func nodePortChecks(node string, cfg snapshot.ProxyConfig, v *model.NodeView, local []string) []behavior.Finding {
	if v == nil {
		return nil
	}
	given := givenNodePortCIDRs(cfg.NodePortAddresses, v.Family)
	if len(given) == 0 {
		return nil
	}
	cidrs, all := nodePortCIDRs(cfg.NodePortAddresses, v.Family, v.NodeIPs)
	if all {
		return nil
	}
	addrs := slices.Concat(v.NodeIPs, local)
	if len(addrs) == 0 {
		return nil
	}
	// What the keywords add counts too (primary is a node address), and
	// NodePorts kept to loopback are a choice.
	for _, p := range cidrs {
		if p.Addr().IsLoopback() {
			return nil
		}
		for _, ip := range addrs {
			if a, err := netip.ParseAddr(ip); err == nil && p.Contains(a) {
				return nil
			}
		}
	}
	var ports []string
	seen := map[string]bool{}
	for i := range v.Ports {
		p := &v.Ports[i]
		if p.NodePort == 0 {
			continue
		}
		name := fmt.Sprintf("%s %d/%s", p.SPN(), p.NodePort, p.Protocol)
		if !seen[name] {
			seen[name] = true
			ports = append(ports, name)
		}
	}
	if len(ports) == 0 {
		return nil
	}
	ranges := make([]string, len(given))
	for i, p := range given {
		ranges[i] = p.String()
	}
	known := slices.Compact(slices.Sorted(slices.Values(addrs)))
	return []behavior.Finding{{
		Type: behavior.NodePortAddressesMismatch, Node: node,
		Expected: "NodePorts answered on the node's addresses (" + strings.Join(v.NodeIPs, ", ") + ")",
		Observed: "nodePortAddresses " + strings.Join(ranges, ", ") + " hold none of them",
		Rules:    wording.FirstN(append([]string{"kube-proxy nodePortAddresses " + strings.Join(cfg.NodePortAddresses, ", ") + " (" + settingsSource(cfg) + ")"}, ports...), 6),
		Message: fmt.Sprintf("kube-proxy's nodePortAddresses (%s) hold none of node %s's addresses (%s): its %s answer on no address of the node, so clients and load balancers that send to them get no answer. Set nodePortAddresses to ranges that hold the node's addresses, or to primary",
			strings.Join(ranges, ", "), node, wording.And(known), wording.Count(len(ports), "NodePort", "NodePorts")),
	}}
}
