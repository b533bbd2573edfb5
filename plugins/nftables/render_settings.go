package nftables

import (
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/proxyrelease"
	"github.com/svctrace/svctrace/snapshot"
)

// SettingsFrom works out the render settings of a family from kube-proxy's
// configuration, the node's addresses of the family (primary first) and,
// where it is known (non-nil), the table kube-proxy holds now: what the
// configuration does not tell is read off it. The Service CIDRs come from
// the cluster-ips-check drop rule, the NodePort addresses from the
// nodeport-ips set (its absence is NodePorts on every address), the
// masquerade bit from the masquerading chain, and the local CIDR from the
// services chain's masquerade rule.
func SettingsFrom(cfg snapshot.ProxyConfig, family string, nodeIPs []string, current *Layout) RenderSettings {
	s := RenderSettings{Family: family, MasqueradeBit: 14, MasqueradeAll: cfg.MasqueradeAll}
	if cfg.MasqueradeBit != nil {
		s.MasqueradeBit = *cfg.MasqueradeBit
	}
	if len(nodeIPs) > 0 {
		s.NodeIP = nodeIPs[0]
	}
	if v, ok := proxyrelease.Minor(cfg.Version); ok {
		s.Minor = v
	}
	switch cfg.DetectLocalMode {
	case "", "ClusterCIDR":
		s.LocalCIDR = dataplane.CIDROfFamily(cfg.ClusterCIDRs, family)
	case "BridgeInterface":
		s.LocalIface = cfg.BridgeInterface
	case "InterfaceNamePrefix":
		if cfg.InterfaceNamePrefix != "" {
			s.LocalIface = cfg.InterfaceNamePrefix + "*"
		}
	}
	s.NodePortIPs = nodePortIPsFrom(cfg.NodePortAddresses, family, nodeIPs)
	if current == nil {
		return s
	}
	ipX := nftFamily(family)
	if c := current.Chains["cluster-ips-check"]; c != nil {
		for _, r := range c.Rules {
			if rest, ok := strings.CutPrefix(r, ipX+" daddr "); ok && strings.Contains(r, `"Drop traffic to unallocated ClusterIPs"`) {
				cidrs, _, _ := strings.Cut(rest, " drop")
				s.ServiceCIDRs = strings.Fields(strings.NewReplacer("{", "", "}", "", ",", "").Replace(cidrs))
			}
		}
	}
	if set, ok := current.Sets["nodeport-ips"]; ok {
		s.NodePortIPs = append([]string{}, set.Elements...)
	} else if _, ok := current.Sets[mapServiceNodePorts]; ok {
		s.NodePortIPs = nil
	}
	if c := current.Chains["masquerading"]; c != nil && len(c.Rules) > 0 {
		if f := strings.Fields(c.Rules[0]); len(f) > 3 && f[0] == "meta" && f[1] == "mark" && f[2] == "&" {
			if m, err := strconv.ParseUint(f[3], 0, 32); err == nil && bits.OnesCount64(m) == 1 {
				s.MasqueradeBit = int32(bits.TrailingZeros64(m))
			}
		}
	}
	if c := current.Chains["services"]; c != nil {
		for _, r := range c.Rules {
			if rest, ok := strings.CutPrefix(r, ipX+" daddr @cluster-ips "+ipX+" saddr != "); ok {
				s.LocalCIDR, _, _ = strings.Cut(rest, " ")
			}
			if rest, ok := strings.CutPrefix(r, ipX+" daddr @cluster-ips iifname != "); ok && cfg.DetectLocalMode == "" {
				if f := strings.Fields(rest); len(f) > 0 {
					if name, err := strconv.Unquote(f[0]); err == nil {
						s.LocalIface, s.LocalCIDR = name, ""
					}
				}
			}
		}
	}
	return s
}

// nodePortIPsFrom are the node addresses --nodeport-addresses selects,
// nil when it selects every local address (no selector of the family, or
// a zero-length one). Only the node's addresses of the family are known
// here: CIDRs select among them.
func nodePortIPsFrom(selectors []string, family string, nodeIPs []string) []string {
	if len(selectors) == 0 {
		return nil
	}
	out := []string{}
	matchAll := true
	for _, sel := range selectors {
		if sel == "primary" {
			// kube-proxy turns it into the primary node IP of each
			// family it knows one of.
			if len(nodeIPs) > 0 {
				matchAll = false
				out = append(out, nodeIPs[0])
			}
			continue
		}
		p, err := netip.ParsePrefix(sel)
		if err != nil || p.Addr().Is4() != (family != "IPv6") {
			continue
		}
		if p.Bits() == 0 {
			return nil
		}
		matchAll = false
		for _, ip := range nodeIPs {
			if a, err := netip.ParseAddr(ip); err == nil && p.Contains(a) {
				out = append(out, ip)
			}
		}
	}
	if matchAll {
		return nil
	}
	return out
}

// check refuses settings a rule could not hold as what they are: they
// come from kube-proxy's configuration and from the table the kernel
// holds, and are written into the nft script.
func (s RenderSettings) check() error {
	if s.MasqueradeBit < 0 || s.MasqueradeBit > 31 {
		return fmt.Errorf("masquerade bit %d is not a bit of a 32-bit mark", s.MasqueradeBit)
	}
	if s.LocalIface != "" && !ruleIface(strings.TrimSuffix(s.LocalIface, "*")) {
		return fmt.Errorf("local-traffic detector's interface %q is not an interface name a rule can hold", s.LocalIface)
	}
	for _, c := range append([]string{s.LocalCIDR}, s.ServiceCIDRs...) {
		if _, err := netip.ParsePrefix(c); c != "" && err != nil {
			return fmt.Errorf("CIDR %q: %w", c, err)
		}
	}
	return dataplane.CheckNodeAddrs(s.NodeIP, s.NodePortIPs)
}

// ruleIface reports whether an interface name (or prefix) is one a rule
// can hold as itself: 1 to 15 bytes of printable ASCII, none of them a
// blank, a quote, a backslash, '/', ':' or a wildcard, and not starting
// with '-' or '!'.
func ruleIface(name string) bool {
	if name == "" || len(name) > 15 || name == "." || name == ".." || name[0] == '-' || name[0] == '!' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"'\\/:+*", c) >= 0 {
			return false
		}
	}
	return true
}
