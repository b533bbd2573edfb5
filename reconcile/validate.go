package reconcile

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// A repair renders the API objects and kube-proxy's configuration into
// the input of a tool that runs as root (iptables-restore, nft -f). The
// live API validates its objects, but a configuration read from
// kube-proxy's unauthenticated /configz, or objects given in a file, may
// hold anything: a value that is not what its field says it is would be
// written as a rule of its own. Every value a plane renders is therefore
// checked here, by its type, before any plane sees it; the planes then
// check their payloads again before writing.

// refusal is the error for a value that may not be rendered: who holds
// it, the field, the value, and why.
func refusal(owner, field, value, why string) error {
	return fmt.Errorf("%s: %s %q %s: refusing to render it", owner, field, value, why)
}

// validateRepairInput checks every value of a plan's input that a plane
// renders into a line of its payload.
func validateRepairInput(in dataplane.RepairInput) error {
	if err := validateConfig("node "+in.State.Name+": kube-proxy's configuration", in.Config, in.Family); err != nil {
		return err
	}
	node := "node " + in.State.Name
	for i, a := range in.NodeIPs {
		if err := checkAddr(a, ""); err != "" {
			return refusal(node, fmt.Sprintf("node IP [%d]", i), a, err)
		}
	}
	for i, a := range in.LocalAddrs {
		if err := checkAddr(a, ""); err != "" {
			return refusal(node, fmt.Sprintf("local address [%d]", i), a, err)
		}
	}
	for i, c := range in.PodCIDRs {
		if err := checkPrefix(c, ""); err != "" {
			return refusal(node, fmt.Sprintf("spec.podCIDRs[%d]", i), c, err)
		}
	}
	if in.View != nil {
		return validateView(in.View)
	}
	return nil
}

// validateConfig checks the settings of kube-proxy a plane renders.
// family, when set, is the family of the plan.
func validateConfig(owner string, cfg snapshot.ProxyConfig, family string) error {
	if cfg.Source != "" {
		owner += " (from " + cfg.Source + ")"
	}
	for i, c := range cfg.ClusterCIDRs {
		if err := checkPrefix(strings.TrimSpace(c), ""); err != "" {
			return refusal(owner, fmt.Sprintf("clusterCIDRs[%d]", i), c, err)
		}
	}
	switch cfg.DetectLocalMode {
	case "", "ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix":
	default:
		return refusal(owner, "detectLocalMode", cfg.DetectLocalMode, "is not a local-traffic detector kube-proxy has (ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix)")
	}
	if cfg.BridgeInterface != "" {
		if err := checkIfaceName(cfg.BridgeInterface, maxIfaceName); err != "" {
			return refusal(owner, "detectLocal.bridgeInterface", cfg.BridgeInterface, err)
		}
	}
	if cfg.InterfaceNamePrefix != "" {
		// iptables writes the prefix with a '+' after it, and the whole
		// must still be a name.
		if err := checkIfaceName(cfg.InterfaceNamePrefix, maxIfaceName-1); err != "" {
			return refusal(owner, "detectLocal.interfaceNamePrefix", cfg.InterfaceNamePrefix, err)
		}
	}
	if b := cfg.MasqueradeBit; b != nil && (*b < 0 || *b > 31) {
		return refusal(owner, "iptables.masqueradeBit", fmt.Sprint(*b), "is not a bit of a 32-bit mark (0 to 31)")
	}
	for i, a := range cfg.NodePortAddresses {
		if a == "primary" {
			continue
		}
		if err := checkPrefix(a, ""); err != "" {
			return refusal(owner, fmt.Sprintf("nodePortAddresses[%d]", i), a, err+` (it is "primary" or a CIDR)`)
		}
	}
	return nil
}

// validateView checks what a plane renders of kube-proxy's view: the
// node's addresses, and each Service port's names, addresses, ports and
// endpoints.
func validateView(v *model.NodeView) error {
	for i, a := range v.NodeIPs {
		if err := checkAddr(a, ""); err != "" {
			return refusal("node "+v.Node, fmt.Sprintf("status.addresses[%d]", i), a, err)
		}
	}
	for i := range v.Ports {
		if err := validatePort(&v.Ports[i], v.Family); err != nil {
			return err
		}
	}
	return nil
}

// validatePort checks one Service port of a view.
func validatePort(p *model.ServicePort, family string) error {
	owner := "service " + p.Namespace + "/" + p.Name
	if err := checkName(p.Namespace); err != "" {
		return refusal(owner, "metadata.namespace", p.Namespace, err)
	}
	if err := checkName(p.Name); err != "" {
		return refusal(owner, "metadata.name", p.Name, err)
	}
	if p.PortName != "" {
		if err := checkName(p.PortName); err != "" {
			return refusal(owner, "spec.ports[].name", p.PortName, err)
		}
	}
	if p.PortName != "" {
		owner += ", port " + p.PortName
	}
	switch p.Protocol {
	case "TCP", "UDP", "SCTP":
	default:
		return refusal(owner, "spec.ports[].protocol", p.Protocol, "is not TCP, UDP or SCTP")
	}
	if err := checkPort(p.Port, false); err != "" {
		return refusal(owner, "spec.ports[].port", fmt.Sprint(p.Port), err)
	}
	if err := checkPort(p.NodePort, true); err != "" {
		return refusal(owner, "spec.ports[].nodePort", fmt.Sprint(p.NodePort), err)
	}
	if err := checkPort(p.HealthCheckNodePort, true); err != "" {
		return refusal(owner, "spec.healthCheckNodePort", fmt.Sprint(p.HealthCheckNodePort), err)
	}
	if t := p.AffinityTimeoutSeconds; t < 0 || t > 86400 {
		return refusal(owner, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", fmt.Sprint(t), "is not from 0 to 86400")
	}
	if p.ClusterIP != "" {
		if err := checkAddr(p.ClusterIP, family); err != "" {
			return refusal(owner, "spec.clusterIP", p.ClusterIP, err)
		}
	}
	for _, list := range []struct {
		field string
		addrs []string
	}{{"spec.externalIPs[]", p.ExternalIPs}, {"status.loadBalancer.ingress[].ip", p.LoadBalancerIPs}} {
		for _, a := range list.addrs {
			if err := checkAddr(a, family); err != "" {
				return refusal(owner, list.field, a, err)
			}
		}
	}
	for _, c := range p.LoadBalancerSourceRanges {
		if err := checkPrefix(c, family); err != "" {
			return refusal(owner, "spec.loadBalancerSourceRanges[]", c, err)
		}
	}
	for _, eps := range [][]model.Endpoint{p.Endpoints, p.ClusterEndpoints, p.LocalEndpoints} {
		for _, ep := range eps {
			if err := validateEndpoint(owner, ep, family); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateEndpoint checks an endpoint's address and port, naming the
// object it came from.
func validateEndpoint(owner string, ep model.Endpoint, family string) error {
	switch {
	case ep.Slice != "":
		owner += ", EndpointSlice " + ep.Slice
	case ep.EndpointsObject != "":
		owner += ", Endpoints " + ep.EndpointsObject
	}
	if err := checkAddr(ep.IP, family); err != "" {
		return refusal(owner, "endpoints[].addresses[]", ep.IP, err)
	}
	if err := checkPort(ep.Port, false); err != "" {
		return refusal(owner, "ports[].port", fmt.Sprint(ep.Port), err)
	}
	return nil
}

// validateServices checks the addresses of the Services that get node
// rules: one that is not an address would leave the Service, or that
// address, out of the render, and a repair would then delete its rules.
func validateServices(c *snapshot.Cluster) error {
	for i := range c.Services {
		svc := &c.Services[i]
		if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
			continue
		}
		owner := "service " + svc.Namespace + "/" + svc.Name
		if err := checkAddr(svc.Spec.ClusterIP, ""); err != "" {
			return refusal(owner, "spec.clusterIP", svc.Spec.ClusterIP, err)
		}
		for j, a := range svc.Spec.ClusterIPs {
			if err := checkAddr(a, ""); err != "" {
				return refusal(owner, fmt.Sprintf("spec.clusterIPs[%d]", j), a, err)
			}
		}
		for j, a := range svc.Spec.ExternalIPs {
			if err := checkAddr(strings.TrimSpace(a), ""); err != "" {
				return refusal(owner, fmt.Sprintf("spec.externalIPs[%d]", j), a, err)
			}
		}
		for j, ing := range svc.Status.LoadBalancer.Ingress {
			if err := checkAddr(ing.IP, ""); ing.IP != "" && err != "" {
				return refusal(owner, fmt.Sprintf("status.loadBalancer.ingress[%d].ip", j), ing.IP, err)
			}
		}
		for j, c := range svc.Spec.LoadBalancerSourceRanges {
			if err := checkPrefix(strings.TrimSpace(c), ""); err != "" {
				return refusal(owner, fmt.Sprintf("spec.loadBalancerSourceRanges[%d]", j), c, err)
			}
		}
	}
	return nil
}
