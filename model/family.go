package model

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// checkFamily validates a family name ("IPv4" or "IPv6").
func checkFamily(family string) (corev1.IPFamily, error) {
	switch corev1.IPFamily(family) {
	case corev1.IPv4Protocol, corev1.IPv6Protocol:
		return corev1.IPFamily(family), nil
	}
	return "", fmt.Errorf("unknown IP family %q (want %s or %s)", family, corev1.IPv4Protocol, corev1.IPv6Protocol)
}

// ipFamilyOf returns the family of a parsed IP.
func ipFamilyOf(ip net.IP) corev1.IPFamily {
	if ip.To4() != nil {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// normalizeIP returns the canonical text of s and its family, or ok false
// when s is not an IP address.
func normalizeIP(s string) (string, corev1.IPFamily, bool) {
	ip := net.ParseIP(strings.TrimSpace(s))
	if ip == nil {
		return "", "", false
	}
	return ip.String(), ipFamilyOf(ip), true
}

// ipsOfFamily keeps the valid IPs of one family, normalised, in order.
func ipsOfFamily(ips []string, family corev1.IPFamily) []string {
	var out []string
	for _, s := range ips {
		if n, f, ok := normalizeIP(s); ok && f == family {
			out = append(out, n)
		}
	}
	return out
}

// clusterIPOfFamily is the service's cluster IP of that family, as
// kube-proxy's GetClusterIPByFamily picks it, normalised ("" if none).
// bad, when the value it picks is not an address of the family, says so
// and names it: the API server refuses such a Service, so objects that
// hold one are damaged, and the value must reach no rule.
func clusterIPOfFamily(svc *corev1.Service, family corev1.IPFamily) (ip, bad string) {
	if len(svc.Spec.IPFamilies) == 0 {
		n, f, ok := normalizeIP(svc.Spec.ClusterIP)
		switch {
		case !ok:
			return "", fmt.Sprintf("clusterIP %q is not an IP address", svc.Spec.ClusterIP)
		case f != family:
			return "", ""
		}
		return n, ""
	}
	for i, f := range svc.Spec.IPFamilies {
		if f != family || i >= len(svc.Spec.ClusterIPs) {
			continue
		}
		raw := svc.Spec.ClusterIPs[i]
		n, nf, ok := normalizeIP(raw)
		switch {
		case !ok:
			return "", fmt.Sprintf("clusterIPs[%d] %q is not an IP address", i, raw)
		case nf != family:
			return "", fmt.Sprintf("clusterIPs[%d] %q is not an %s address, though ipFamilies[%d] is %s", i, raw, family, i, f)
		}
		return n, ""
	}
	return "", ""
}

// sourceRangesOfFamily trims, parses and keeps the CIDRs of one family,
// normalised; a zero-length prefix means "allow all", which kube-proxy
// treats as no ranges at all.
func sourceRangesOfFamily(ranges []string, family corev1.IPFamily) []string {
	var out []string
	for _, r := range ranges {
		_, cidr, err := net.ParseCIDR(strings.TrimSpace(r))
		if err != nil || ipFamilyOf(cidr.IP) != family {
			continue
		}
		if ones, _ := cidr.Mask.Size(); ones == 0 {
			return nil
		}
		out = append(out, cidr.String())
	}
	return out
}

// loadBalancerVIPs are the ingress IPs of one family, excluding ipMode
// Proxy entries.
func loadBalancerVIPs(svc *corev1.Service, family corev1.IPFamily) []string {
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP == "" || (ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP) {
			continue
		}
		if n, f, ok := normalizeIP(ing.IP); ok && f == family {
			out = append(out, n)
		}
	}
	return out
}

// nodeIPs are the node's InternalIPs then ExternalIPs of one family.
func nodeIPs(node *corev1.Node, family corev1.IPFamily) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type != t {
				continue
			}
			if n, f, ok := normalizeIP(a.Address); ok && f == family && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// podCIDRs are the node's pod ranges of the family, masked (spec.podCIDRs,
// else spec.podCIDR).
func podCIDRs(node *corev1.Node, family corev1.IPFamily) []string {
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	var out []string
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil || p.Addr().Is4() != (family == corev1.IPv4Protocol) {
			continue
		}
		out = append(out, p.Masked().String())
	}
	return out
}
