package ipvs

import "strings"

// kube-proxy's ipsets in ipvs mode, by their IPv4 names (an IPv6 proxier
// names them KUBE-6-…).
const (
	setLoopBack               = "KUBE-LOOP-BACK"
	setClusterIP              = "KUBE-CLUSTER-IP"
	setExternalIP             = "KUBE-EXTERNAL-IP"
	setExternalIPLocal        = "KUBE-EXTERNAL-IP-LOCAL"
	setLoadBalancer           = "KUBE-LOAD-BALANCER"
	setLoadBalancerFW         = "KUBE-LOAD-BALANCER-FW"
	setLoadBalancerLocal      = "KUBE-LOAD-BALANCER-LOCAL"
	setLoadBalancerSourceIP   = "KUBE-LOAD-BALANCER-SOURCE-IP"
	setLoadBalancerSourceCIDR = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	setNodePortTCP            = "KUBE-NODE-PORT-TCP"
	setNodePortLocalTCP       = "KUBE-NODE-PORT-LOCAL-TCP"
	setNodePortUDP            = "KUBE-NODE-PORT-UDP"
	setNodePortLocalUDP       = "KUBE-NODE-PORT-LOCAL-UDP"
	setNodePortSCTP           = "KUBE-NODE-PORT-SCTP-HASH"
	setNodePortLocalSCTP      = "KUBE-NODE-PORT-LOCAL-SCTP-HASH"
	setHealthCheckNodePort    = "KUBE-HEALTH-CHECK-NODE-PORT"
	setIPVSIPs                = "KUBE-IPVS-IPS"
)

// setKinds are kube-proxy's ipsets: their type, and the comment of the
// iptables rules that match them.
var setKinds = []struct{ name, typ, comment string }{
	{setLoopBack, "hash:ip,port,ip", "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"},
	{setClusterIP, "hash:ip,port", "Kubernetes service cluster ip + port for masquerade purpose"},
	{setExternalIP, "hash:ip,port", "Kubernetes service external ip + port for masquerade and filter purpose"},
	{setExternalIPLocal, "hash:ip,port", "Kubernetes service external ip + port with externalTrafficPolicy=local"},
	{setLoadBalancer, "hash:ip,port", "Kubernetes service lb portal"},
	{setLoadBalancerFW, "hash:ip,port", "Kubernetes service load balancer ip + port for load balancer with sourceRange"},
	{setLoadBalancerLocal, "hash:ip,port", "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"},
	{setLoadBalancerSourceIP, "hash:ip,port,ip", "Kubernetes service load balancer ip + port + source IP for packet filter purpose"},
	{setLoadBalancerSourceCIDR, "hash:ip,port,net", "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"},
	{setNodePortTCP, "bitmap:port", "Kubernetes nodeport TCP port for masquerade purpose"},
	{setNodePortLocalTCP, "bitmap:port", "Kubernetes nodeport TCP port with externalTrafficPolicy=local"},
	{setNodePortUDP, "bitmap:port", "Kubernetes nodeport UDP port for masquerade purpose"},
	{setNodePortLocalUDP, "bitmap:port", "Kubernetes nodeport UDP port with externalTrafficPolicy=local"},
	{setNodePortSCTP, "hash:ip,port", "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'"},
	{setNodePortLocalSCTP, "hash:ip,port", "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"},
	{setHealthCheckNodePort, "bitmap:port", "Kubernetes health check node port"},
	{setIPVSIPs, "hash:ip", "Addresses on the ipvs interface"},
}

// familySetName is a set's name for the family: KUBE-6-CLUSTER-IP for
// IPv6, cut to the 31 characters an ipset name holds, as kube-proxy cuts
// it (KUBE-6-NODE-PORT-LOCAL-SCTP-HAS).
func familySetName(base, family string) string {
	if family != "IPv6" {
		return base
	}
	name := "KUBE-6-" + strings.TrimPrefix(base, "KUBE-")
	return name[:min(len(name), 31)]
}

// newSets are kube-proxy's ipsets of a family, empty, created as it
// creates them.
func newSets(family string) map[string]*IPSet {
	out := map[string]*IPSet{}
	for _, k := range setKinds {
		set := &IPSet{Name: familySetName(k.name, family), Type: k.typ}
		if k.typ == "bitmap:port" {
			set.Options = []string{"range", "0-65535"}
		} else {
			set.Family = "inet"
			if family == "IPv6" {
				set.Family = "inet6"
			}
			set.Options = []string{"hashsize", "1024", "maxelem", "65536"}
		}
		out[set.Name] = set
	}
	return out
}

// set is one of the render's sets by its IPv4 name.
func (t *Target) set(base string) *IPSet { return t.Sets[familySetName(base, t.Family)] }

// add puts a member in a set (once), owned by a Service port.
func (t *Target) add(base, member, spn string) {
	set := t.set(base)
	key := set.Name + " " + member
	if _, ok := t.owners[key]; ok {
		return
	}
	t.owners[key] = spn
	set.Members = append(set.Members, Member{Text: member})
}

// setComment is the comment of the rules matching a set.
func setComment(base string) string {
	for _, k := range setKinds {
		if k.name == base {
			return k.comment
		}
	}
	return ""
}
