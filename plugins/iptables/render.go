package iptables

import (
	"fmt"

	"github.com/svctrace/svctrace/model"
)

// RenderSettings are the kube-proxy settings and node facts the iptables
// layout depends on beyond the Services and endpoints.
type RenderSettings struct {
	// Family is IPv4 or IPv6.
	Family string
	// MasqueradeBit is kube-proxy's --iptables-masquerade-bit (14).
	MasqueradeBit int32
	// MasqueradeAll is --masquerade-all.
	MasqueradeAll bool
	// Local is the local-traffic detector; a zero one is not implemented
	// (no cluster CIDR is known), and its rules are then left out, as
	// kube-proxy leaves them out.
	Local LocalDetector
	// LocalhostNodePorts is --iptables-localhost-nodeports (true by
	// default; IPv4 only).
	LocalhostNodePorts bool
	// NodePortIPs are the addresses --nodeport-addresses selects on the
	// node; nil when NodePorts open on every local address.
	NodePortIPs []string
	// NodeIP is the node's primary address of the family: a load
	// balancer's source ranges that hold it also admit the VIPs.
	NodeIP string
	// RandomFully: the MASQUERADE rule has --random-fully (an iptables
	// that supports it).
	RandomFully bool
	// NFAcct: the kernel has the nfacct counters kube-proxy counts with.
	NFAcct bool
	// ConntrackLiberal: nf_conntrack_tcp_be_liberal is set, and kube-proxy
	// then writes no rule dropping INVALID packets.
	ConntrackLiberal bool
}

// LocalDetector is kube-proxy's local-traffic detector, as the matches it
// adds to a rule.
type LocalDetector struct {
	// Mode is ClusterCIDR, NodeCIDR, BridgeInterface or
	// InterfaceNamePrefix; "" when none is in use.
	Mode string
	// CIDR is the family's cluster or node CIDR for the CIDR modes.
	CIDR string
	// Interface is the bridge, or the prefix, of the interface modes.
	Interface string
}

// Implemented reports whether the detector can tell local traffic: a
// CIDR mode with its CIDR, an interface mode with its interface.
func (d LocalDetector) Implemented() bool {
	switch d.Mode {
	case "ClusterCIDR", "NodeCIDR", "":
		return d.CIDR != ""
	case "BridgeInterface", "InterfaceNamePrefix":
		return d.Interface != ""
	}
	return false
}

// apply adds the detector's match to a rule: local traffic, or (not)
// traffic that is not local.
func (d LocalDetector) apply(r *saveRule, local bool) *saveRule {
	neg := "! "
	if local {
		neg = ""
	}
	switch d.Mode {
	case "BridgeInterface":
		return r.iface(neg + d.Interface)
	case "InterfaceNamePrefix":
		return r.iface(neg + d.Interface + "+")
	}
	return r.from(neg + d.CIDR)
}

// masqueradeMark is the mark kube-proxy sets and tests, as iptables-save
// prints it.
func (s RenderSettings) masqueradeMark() string {
	return fmt.Sprintf("%#x", uint32(1)<<uint(s.MasqueradeBit))
}

// largeClusterEndpoints is the number of endpoints over which kube-proxy
// drops the comments of its per-endpoint rules.
const largeClusterEndpoints = 1000

// Render is the iptables layout kube-proxy's iptables mode (v1.28 to
// v1.36 write the same) programs for the view: every chain and rule it
// writes in its restore payload, with its jump rules and canary chains.
//
// A value it cannot write so that iptables-restore reads it back as the
// same (a settings value that is not what it says, a string it cannot
// quote) is an error, and nothing of the layout may be written.
func Render(v *model.NodeView, s RenderSettings) (*Layout, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("iptables render: %w", err)
	}
	l := NewLayout(s.Family, nil)
	r := &renderer{s: s, filter: l.Tables["filter"], nat: l.Tables["nat"]}
	total := 0
	for i := range v.Ports {
		total += len(v.Ports[i].Endpoints)
	}
	r.large = total > largeClusterEndpoints
	r.jumps()
	r.fixed()
	for i := range v.Ports {
		r.servicePort(&v.Ports[i])
	}
	r.tail()
	r.nat.findOwners()
	l.Tables["mangle"].Chains["KUBE-PROXY-CANARY"] = nil
	if r.err != nil {
		return nil, fmt.Errorf("iptables render: %w", r.err)
	}
	return l, nil
}

type renderer struct {
	s           RenderSettings
	filter, nat *LayoutTable
	// large is kube-proxy's large cluster mode: no comments on the rules
	// of per-endpoint chains.
	large bool
	// err is the first rule that could not be written.
	err error
}

// add appends rules to their chains of a table, declaring them.
func (r *renderer) add(t *LayoutTable, rules ...*saveRule) {
	for _, x := range rules {
		r.keep(x)
		t.Chains[x.chain] = append(t.Chains[x.chain], x.String())
	}
}

// keep notes the first rule that could not be written.
func (r *renderer) keep(x *saveRule) {
	if x.err != nil && r.err == nil {
		r.err = x.err
	}
}

// declare makes chains exist (empty if nothing is added).
func declare(t *LayoutTable, chains ...string) {
	for _, c := range chains {
		if _, ok := t.Chains[c]; !ok {
			t.Chains[c] = nil
		}
	}
}

// jumps are kube-proxy's rules in the built-in chains: it prepends each
// that is missing, in this order, so on a node it set up they read in the
// reverse order.
func (r *renderer) jumps() {
	newConn := "conntrack --ctstate NEW"
	type jump struct {
		table       *LayoutTable
		from, to    string
		comment, at string
	}
	js := []jump{
		{r.filter, "INPUT", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals", newConn},
		{r.filter, "FORWARD", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals", newConn},
		{r.filter, "INPUT", "KUBE-NODEPORTS", "kubernetes health check service ports", ""},
		{r.filter, "FORWARD", "KUBE-SERVICES", "kubernetes service portals", newConn},
		{r.filter, "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", newConn},
		{r.filter, "FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules", ""},
		{r.filter, "INPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", newConn},
		{r.filter, "OUTPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", newConn},
		{r.filter, "FORWARD", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", newConn},
		{r.nat, "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", ""},
		{r.nat, "PREROUTING", "KUBE-SERVICES", "kubernetes service portals", ""},
		{r.nat, "POSTROUTING", "KUBE-POSTROUTING", "kubernetes postrouting rules", ""},
		{r.filter, "INPUT", "KUBE-FIREWALL", "", ""},
		{r.filter, "OUTPUT", "KUBE-FIREWALL", "", ""},
	}
	for _, j := range js {
		x := rule(j.from)
		if j.at != "" {
			x.mod(j.at)
		}
		if j.comment != "" {
			x.comment(j.comment)
		}
		r.keep(x)
		j.table.Jumps[j.from] = append([]string{x.target(j.to).String()}, j.table.Jumps[j.from]...)
	}
}

// fixed writes the chains that are not per Service, and their rules that
// come before the Services'.
func (r *renderer) fixed() {
	declare(r.filter, "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL", "KUBE-PROXY-CANARY")
	declare(r.nat, "KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY")
	mark := r.s.masqueradeMark()
	masq := rule("KUBE-POSTROUTING").comment("kubernetes service traffic requiring SNAT").target("MASQUERADE")
	if r.s.RandomFully {
		masq.jump += " --random-fully"
	}
	r.add(r.nat,
		rule("KUBE-POSTROUTING").mod("mark ! --mark "+mark+"/"+mark).target("RETURN"),
		rule("KUBE-POSTROUTING").target("MARK --set-xmark "+mark+"/0x0"),
		masq,
		rule("KUBE-MARK-MASQ").target("MARK --set-xmark "+mark+"/"+mark),
	)
	if r.s.Family != "IPv6" && r.s.LocalhostNodePorts {
		r.add(r.filter, rule("KUBE-FIREWALL").from("! 127.0.0.0/8").to("127.0.0.0/8").
			comment("block incoming localnet connections").
			mod("conntrack ! --ctstate RELATED,ESTABLISHED,DNAT").target("DROP"))
	} else {
		// kube-proxy makes sure the chain exists and jumps to it, but
		// writes no rule of it: what it holds is kubelet's.
		r.filter.Kept = append(r.filter.Kept, "KUBE-FIREWALL")
	}
}

// tail writes the rules that come after every Service's: the NodePort
// dispatch at the end of nat KUBE-SERVICES, and KUBE-FORWARD.
func (r *renderer) tail() {
	const np = "kubernetes service nodeports; NOTE: this must be the last rule in this chain"
	if r.s.NodePortIPs == nil {
		x := rule("KUBE-SERVICES").comment(np).mod("addrtype --dst-type LOCAL")
		switch {
		case r.s.Family == "IPv6":
			x.to("! ::1/128")
		case !r.s.LocalhostNodePorts:
			x.to("! 127.0.0.0/8")
		}
		r.add(r.nat, x.target("KUBE-NODEPORTS"))
	} else {
		for _, ip := range r.s.NodePortIPs {
			r.add(r.nat, rule("KUBE-SERVICES").to(hostPrefix(ip, r.s.Family)).comment(np).target("KUBE-NODEPORTS"))
		}
	}
	mark := r.s.masqueradeMark()
	if !r.s.ConntrackLiberal {
		x := rule("KUBE-FORWARD").mod("conntrack --ctstate INVALID")
		if r.s.NFAcct {
			x.nfacct("ct_state_invalid_dropped_pkts")
		}
		r.add(r.filter, x.target("DROP"))
	}
	r.add(r.filter,
		rule("KUBE-FORWARD").comment("kubernetes forwarding rules").mod("mark --mark "+mark+"/"+mark).target("ACCEPT"),
		rule("KUBE-FORWARD").comment("kubernetes forwarding conntrack rule").mod("conntrack --ctstate RELATED,ESTABLISHED").target("ACCEPT"),
	)
}
