package model

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// unusableValues says which addresses of a Service are no address at
// all (externalIPs, load-balancer ingress IPs, source ranges), each
// named with its field: the API server refuses them, so objects that
// hold one are damaged. Each is left out of every view, as kube-proxy
// leaves out what it cannot parse; a note says so rather than nothing.
func unusableValues(svc *corev1.Service) []string {
	var out []string
	bad := func(field, v, what string) {
		out = append(out, fmt.Sprintf("Service %s/%s: %s %q is not %s: left out", svc.Namespace, svc.Name, field, v, what))
	}
	for i, ip := range svc.Spec.ExternalIPs {
		if _, _, ok := normalizeIP(ip); !ok {
			bad(fmt.Sprintf("spec.externalIPs[%d]", i), ip, "an IP address")
		}
	}
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		if _, _, ok := normalizeIP(ing.IP); ing.IP != "" && !ok {
			bad(fmt.Sprintf("status.loadBalancer.ingress[%d].ip", i), ing.IP, "an IP address")
		}
	}
	for i, r := range svc.Spec.LoadBalancerSourceRanges {
		if _, _, err := net.ParseCIDR(strings.TrimSpace(r)); err != nil {
			bad(fmt.Sprintf("spec.loadBalancerSourceRanges[%d]", i), r, "a CIDR")
		}
	}
	return out
}
