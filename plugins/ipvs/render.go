package ipvs

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins/iptables"
)

// RenderSettings are the kube-proxy settings and node facts ipvs mode's
// state depends on beyond the Services and endpoints.
type RenderSettings struct {
	// Family is IPv4 or IPv6.
	Family string
	// Scheduler is --ipvs-scheduler (rr by default).
	Scheduler string
	// NodePortIPs are the node's addresses a NodePort gets a virtual
	// server on: every address of the family but loopback, link-local
	// and kube-ipvs0's, or those --nodeport-addresses selects.
	NodePortIPs []netip.Addr
	// NodeAddrs are all the node's addresses of the family but those on
	// kube-ipvs0: an external or load-balancer address among them is not
	// bound there (nil: NodePortIPs).
	NodeAddrs []netip.Addr
	// NodeIP is the node's primary address of the family: a load
	// balancer whose source ranges hold it is reachable from the node.
	NodeIP netip.Addr
	// MasqueradeBit is --iptables-masquerade-bit (14).
	MasqueradeBit int32
	// MasqueradeAll is --masquerade-all.
	MasqueradeAll bool
	// NotLocal is the local-traffic detector's "not local" match in
	// iptables-save form ("! -s 10.244.0.0/16", "! -i cni0"); "" when
	// the detector is not implemented.
	NotLocal string
	// RandomFully: the MASQUERADE rule has --random-fully.
	RandomFully bool
}

// Target is the state kube-proxy's ipvs mode programs on a node for one
// family: the virtual servers with their real servers, the addresses on
// kube-ipvs0, kube-proxy's ipsets with their members, and the iptables
// rules of the mode.
type Target struct {
	Family   string
	Virtuals []*Virtual
	// Addrs are the addresses bound on kube-ipvs0.
	Addrs []netip.Prefix
	// Sets are kube-proxy's ipsets by name, as it creates them, with
	// their members.
	Sets  map[string]*IPSet
	Rules *iptables.Layout
	// owners name the Service port of each virtual server (by key), of
	// each address and of each set member ("set member").
	owners map[string]string
}

// Owner is the Service port ("ns/name:port") an object of the render
// belongs to: a virtual server by its key, an address, or a set member
// as "SET MEMBER"; "" when it is no one Service's.
func (t *Target) Owner(key string) string { return t.owners[key] }

// Render is the state kube-proxy's ipvs proxier (v1.33 to v1.36) programs
// for the view, following its sync: per Service port, a virtual server on
// the cluster IP, on each external and load-balancer address, and on each
// NodePort address, with the endpoints of the traffic policy as real
// servers (weight 1, masquerading); the virtual addresses on kube-ipvs0;
// the ipset members that mark, filter and admit traffic; and the
// iptables rules that match those sets.
func Render(view *model.NodeView, s RenderSettings) *Target {
	if s.Scheduler == "" {
		s.Scheduler = "rr"
	}
	t := &Target{Family: s.Family, Sets: newSets(s.Family), owners: map[string]string{}}
	r := &renderer{t: t, s: s, nodeAddr: map[netip.Addr]bool{}, bound: map[netip.Addr]bool{}, keys: map[string]bool{}}
	nodeAddrs := s.NodeAddrs
	if nodeAddrs == nil {
		nodeAddrs = s.NodePortIPs
	}
	for _, a := range nodeAddrs {
		r.nodeAddr[a] = true
	}
	for i := range view.Ports {
		r.port(&view.Ports[i])
	}
	addrs := slices.SortedFunc(func(yield func(netip.Addr) bool) {
		for a := range r.bound {
			if !yield(a) {
				return
			}
		}
	}, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, a := range addrs {
		t.Addrs = append(t.Addrs, netip.PrefixFrom(a, a.BitLen()))
		t.add(setIPVSIPs, a.String(), t.owners[a.String()])
	}
	t.Rules = renderRules(t, s, r.noNodeAccess)
	return t
}

// renderer keeps what the render of every Service port shares.
type renderer struct {
	t        *Target
	s        RenderSettings
	nodeAddr map[netip.Addr]bool
	bound    map[netip.Addr]bool
	keys     map[string]bool
	// noNodeAccess are the load balancers (ip, protocol, port) with
	// source ranges that leave the node out: KUBE-IPVS-OUT-FILTER drops
	// the node's own connections to them.
	noNodeAccess []string
}

// port renders one Service port.
func (r *renderer) port(p *model.ServicePort) {
	spn := p.SPN()
	proto := p.ProtoLower()
	port := strconv.Itoa(int(p.Port))
	for _, e := range p.Endpoints {
		if e.Local {
			r.t.add(setLoopBack, e.IP+","+proto+":"+strconv.Itoa(int(e.Port))+","+e.IP, spn)
		}
	}
	internal := pick(p.InternalPolicyLocal, p.LocalEndpoints, p.ClusterEndpoints)
	external := pick(p.ExternalPolicyLocal, p.LocalEndpoints, p.ClusterEndpoints)
	if a, err := netip.ParseAddr(p.ClusterIP); err == nil {
		r.t.add(setClusterIP, a.String()+","+proto+":"+port, spn)
		r.virtual(p, a, p.Port, internal, true)
	}
	for _, ip := range p.ExternalIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		set := setExternalIP
		if p.ExternalPolicyLocal {
			set = setExternalIPLocal
		}
		r.t.add(set, a.String()+","+proto+":"+port, spn)
		r.virtual(p, a, p.Port, external, !r.nodeAddr[a])
	}
	for _, ip := range p.LoadBalancerIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		member := a.String() + "," + proto + ":" + port
		r.t.add(setLoadBalancer, member, spn)
		if p.ExternalPolicyLocal {
			r.t.add(setLoadBalancerLocal, member, spn)
		}
		if len(p.LoadBalancerSourceRanges) > 0 {
			r.t.add(setLoadBalancerFW, member, spn)
			fromNode := false
			for _, c := range p.LoadBalancerSourceRanges {
				cidr, err := netip.ParsePrefix(c)
				if err != nil {
					continue
				}
				r.t.add(setLoadBalancerSourceCIDR, member+","+cidr.Masked().String(), spn)
				fromNode = fromNode || r.s.NodeIP.IsValid() && cidr.Contains(r.s.NodeIP)
			}
			if fromNode {
				r.t.add(setLoadBalancerSourceIP, member+","+a.String(), spn)
			} else {
				r.noNodeAccess = append(r.noNodeAccess, a.String()+" "+proto+" "+port)
			}
		}
		r.virtual(p, a, p.Port, external, !r.nodeAddr[a])
	}
	if p.NodePort != 0 && len(r.s.NodePortIPs) > 0 {
		np := strconv.Itoa(int(p.NodePort))
		var members []string
		set, local := "", ""
		switch proto {
		case "tcp":
			set, local, members = setNodePortTCP, setNodePortLocalTCP, []string{np}
		case "udp":
			set, local, members = setNodePortUDP, setNodePortLocalUDP, []string{np}
		case "sctp":
			set, local = setNodePortSCTP, setNodePortLocalSCTP
			for _, a := range r.s.NodePortIPs {
				members = append(members, a.String()+",sctp:"+np)
			}
		}
		for _, m := range members {
			r.t.add(set, m, spn)
			if p.ExternalPolicyLocal {
				r.t.add(local, m, spn)
			}
		}
		for _, a := range r.s.NodePortIPs {
			r.virtual(p, a, p.NodePort, external, false)
		}
	}
	if p.HealthCheckNodePort != 0 {
		r.t.add(setHealthCheckNodePort, strconv.Itoa(int(p.HealthCheckNodePort)), spn)
	}
}

// pick is the endpoints of a traffic policy in ipvs mode: under Local,
// the node's own, or the cluster's when the node has none (kube-proxy's
// ipvs proxier falls back to them); under Cluster, the cluster's.
func pick(local bool, localEPs, clusterEPs []model.Endpoint) []model.Endpoint {
	if local && len(localEPs) > 0 {
		return localEPs
	}
	return clusterEPs
}

// virtual renders a virtual server, bound on kube-ipvs0 when bind.
func (r *renderer) virtual(p *model.ServicePort, a netip.Addr, port int32, eps []model.Endpoint, bind bool) {
	v := &Virtual{Protocol: strings.ToUpper(p.Protocol), Addr: netip.AddrPortFrom(a, uint16(port)), Scheduler: r.s.Scheduler}
	if p.AffinityTimeoutSeconds > 0 {
		v.Persistent = p.AffinityTimeoutSeconds
	}
	if r.s.Scheduler == "mh" {
		// kube-proxy hashes on the source port too under mh.
		v.SchedFlags = []string{"mh-port"}
	}
	seen := map[netip.AddrPort]bool{}
	for _, e := range eps {
		ip, err := netip.ParseAddr(e.IP)
		if err != nil {
			continue
		}
		ap := netip.AddrPortFrom(ip, uint16(e.Port))
		if seen[ap] {
			continue
		}
		seen[ap] = true
		v.Reals = append(v.Reals, Real{Addr: ap, Forward: "Masq", Weight: 1})
	}
	if r.keys[v.Key()] {
		// Two Service ports on one address and port (which the API
		// refuses within a Service): the render keeps the first.
		return
	}
	r.keys[v.Key()] = true
	r.t.Virtuals = append(r.t.Virtuals, v)
	r.t.owners[v.Key()] = p.SPN()
	if bind {
		r.bound[a] = true
		if _, ok := r.t.owners[a.String()]; !ok {
			r.t.owners[a.String()] = p.SPN()
		}
	}
}
