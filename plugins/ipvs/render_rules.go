package ipvs

import (
	"fmt"
	"strings"

	"github.com/svctrace/svctrace/plugins/iptables"
)

// Ownership is which iptables chains kube-proxy's ipvs mode owns: its
// chains in nat and filter, which it declares on every sync, and its jumps
// to them from the built-in chains. Another mode's chains (iptables mode's
// KUBE-SVC-…) are left alone. The node's own connections to a load
// balancer it may not reach are dropped in KUBE-IPVS-OUT-FILTER in the
// order kube-proxy walks its Services, which it does not keep.
var Ownership = &iptables.Ownership{
	Chains: map[string][]string{
		"nat":    {"KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-NODE-PORT", "KUBE-LOAD-BALANCER", "KUBE-MARK-MASQ"},
		"filter": {"KUBE-FORWARD", "KUBE-NODE-PORT", "KUBE-PROXY-FIREWALL", "KUBE-SOURCE-RANGES-FIREWALL", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER"},
	},
	Shared: map[string]bool{"KUBE-IPVS-OUT-FILTER": true},
}

// jumps are kube-proxy's jumps into its chains, by table and built-in
// chain, in iptables-save form.
var jumps = []struct{ table, from, to, comment string }{
	{"nat", "OUTPUT", "KUBE-SERVICES", "kubernetes service portals"},
	{"nat", "PREROUTING", "KUBE-SERVICES", "kubernetes service portals"},
	{"nat", "POSTROUTING", "KUBE-POSTROUTING", "kubernetes postrouting rules"},
	{"filter", "FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules"},
	{"filter", "INPUT", "KUBE-NODE-PORT", "kubernetes health check rules"},
	{"filter", "INPUT", "KUBE-PROXY-FIREWALL", "kube-proxy firewall rules"},
	{"filter", "FORWARD", "KUBE-PROXY-FIREWALL", "kube-proxy firewall rules"},
	{"filter", "INPUT", "KUBE-IPVS-FILTER", "kubernetes ipvs access filter"},
	{"filter", "OUTPUT", "KUBE-IPVS-OUT-FILTER", "kubernetes ipvs access filter"},
}

// setRules are the rules that match a set from a chain, written when the
// set has members, in kube-proxy's order (the Local NodePort sets before
// theirs).
var setRules = []struct{ set, table, from, to, match, proto string }{
	{setLoopBack, "nat", "KUBE-POSTROUTING", "MASQUERADE", "dst,dst,src", ""},
	{setLoadBalancer, "nat", "KUBE-SERVICES", "KUBE-LOAD-BALANCER", "dst,dst", ""},
	{setLoadBalancerLocal, "nat", "KUBE-LOAD-BALANCER", "RETURN", "dst,dst", ""},
	{setNodePortLocalTCP, "nat", "KUBE-NODE-PORT", "RETURN", "dst", "tcp"},
	{setNodePortTCP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst", "tcp"},
	{setNodePortLocalUDP, "nat", "KUBE-NODE-PORT", "RETURN", "dst", "udp"},
	{setNodePortUDP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst", "udp"},
	{setNodePortLocalSCTP, "nat", "KUBE-NODE-PORT", "RETURN", "dst,dst", "sctp"},
	{setNodePortSCTP, "nat", "KUBE-NODE-PORT", "KUBE-MARK-MASQ", "dst,dst", "sctp"},
	{setLoadBalancerFW, "filter", "KUBE-PROXY-FIREWALL", "KUBE-SOURCE-RANGES-FIREWALL", "dst,dst", ""},
	{setLoadBalancerSourceCIDR, "filter", "KUBE-SOURCE-RANGES-FIREWALL", "RETURN", "dst,dst,src", ""},
	{setLoadBalancerSourceIP, "filter", "KUBE-SOURCE-RANGES-FIREWALL", "RETURN", "dst,dst,src", ""},
}

// rulesOf collects a layout's rules as iptables-save prints them.
type rulesOf struct {
	l *iptables.Layout
}

func (r rulesOf) add(table, chain string, parts ...string) {
	line := "-A " + chain
	for _, p := range parts {
		if p != "" {
			line += " " + p
		}
	}
	c := r.l.Tables[table].Chains
	c[chain] = append(c[chain], line)
}

// comment is a comment match as iptables-save prints it.
func comment(c string) string { return `-m comment --comment "` + c + `"` }

// renderRules are ipvs mode's iptables rules, as kube-proxy's
// writeIptablesRules lays them out, given the render's sets.
func renderRules(t *Target, s RenderSettings, noNodeAccess []string) *iptables.Layout {
	l := iptables.NewLayout(s.Family, Ownership)
	for table, chains := range Ownership.Chains {
		for _, c := range chains {
			l.Tables[table].Chains[c] = []string{}
		}
	}
	for _, j := range jumps {
		js := l.Tables[j.table].Jumps
		js[j.from] = append(js[j.from], "-A "+j.from+" "+comment(j.comment)+" -j "+j.to)
	}
	r := rulesOf{l}
	name := func(base string) string { return familySetName(base, s.Family) }
	has := func(base string) bool { return len(t.set(base).Members) > 0 }
	lo := "127.0.0.0/8"
	if s.Family == "IPv6" {
		lo = "::1/128"
	}
	r.add("nat", "KUBE-SERVICES", "-s "+lo, "-j RETURN")
	for _, x := range setRules {
		if !has(x.set) {
			continue
		}
		proto := ""
		if x.proto != "" {
			proto = "-p " + x.proto
		}
		r.add(x.table, x.from, proto, comment(setComment(x.set)), "-m set --match-set "+name(x.set)+" "+x.match, "-j "+x.to)
	}
	if has(setClusterIP) {
		match := comment(setComment(setClusterIP)) + " -m set --match-set " + name(setClusterIP)
		switch {
		case s.MasqueradeAll:
			r.add("nat", "KUBE-SERVICES", match+" dst,dst", "-j KUBE-MARK-MASQ")
		case s.NotLocal != "":
			r.add("nat", "KUBE-SERVICES", s.NotLocal, match+" dst,dst", "-j KUBE-MARK-MASQ")
		default:
			r.add("nat", "KUBE-SERVICES", match+" src,dst", "-j KUBE-MARK-MASQ")
		}
	}
	external := func(match string) {
		r.add("nat", "KUBE-SERVICES", match, "-m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL", "-j ACCEPT")
		r.add("nat", "KUBE-SERVICES", match, "-m addrtype --dst-type LOCAL", "-j ACCEPT")
	}
	if has(setExternalIP) {
		match := comment(setComment(setExternalIP)) + " -m set --match-set " + name(setExternalIP) + " dst,dst"
		r.add("nat", "KUBE-SERVICES", match, "-j KUBE-MARK-MASQ")
		external(match)
	}
	if has(setExternalIPLocal) {
		external(comment(setComment(setExternalIPLocal)) + " -m set --match-set " + name(setExternalIPLocal) + " dst,dst")
	}
	r.add("nat", "KUBE-SERVICES", "-m addrtype --dst-type LOCAL", "-j KUBE-NODE-PORT")
	r.add("nat", "KUBE-LOAD-BALANCER", "-j KUBE-MARK-MASQ")
	r.add("filter", "KUBE-SOURCE-RANGES-FIREWALL", "-j DROP")
	host := "/32"
	if s.Family == "IPv6" {
		host = "/128"
	}
	for _, x := range noNodeAccess {
		f := strings.Fields(x) // ip protocol port
		r.add("filter", "KUBE-IPVS-OUT-FILTER", "-s "+f[0]+host, fmt.Sprintf("-m ipvs --vproto %d --vaddr %s --vport %s", protoNumber(f[1]), f[0], f[2]), "-j DROP")
	}
	for _, base := range []string{setClusterIP, setLoadBalancer} {
		if has(base) {
			r.add("nat", "KUBE-SERVICES", "-m set --match-set "+name(base)+" dst,dst", "-j ACCEPT")
		}
	}
	mark := fmt.Sprintf("%#x", uint32(1)<<uint(s.MasqueradeBit))
	r.add("filter", "KUBE-FORWARD", comment("kubernetes forwarding rules"), "-m mark --mark "+mark+"/"+mark, "-j ACCEPT")
	r.add("filter", "KUBE-FORWARD", comment("kubernetes forwarding conntrack rule"), "-m conntrack --ctstate RELATED,ESTABLISHED", "-j ACCEPT")
	r.add("filter", "KUBE-NODE-PORT", comment(setComment(setHealthCheckNodePort)), "-m set --match-set "+name(setHealthCheckNodePort)+" dst", "-j ACCEPT")
	for _, x := range []struct{ set, match string }{
		{setLoadBalancer, "dst,dst"}, {setClusterIP, "dst,dst"}, {setExternalIP, "dst,dst"},
		{setExternalIPLocal, "dst,dst"}, {setHealthCheckNodePort, "dst"},
	} {
		r.add("filter", "KUBE-IPVS-FILTER", "-m set --match-set "+name(x.set)+" "+x.match, "-j RETURN")
	}
	reject := "icmp-port-unreachable"
	if s.Family == "IPv6" {
		reject = "icmp6-port-unreachable"
	}
	r.add("filter", "KUBE-IPVS-FILTER", "-m conntrack --ctstate NEW", "-m set --match-set "+name(setIPVSIPs)+" dst", "-j REJECT --reject-with "+reject)
	r.add("nat", "KUBE-POSTROUTING", "-m mark ! --mark "+mark+"/"+mark, "-j RETURN")
	r.add("nat", "KUBE-POSTROUTING", "-j MARK --set-xmark "+mark+"/0x0")
	masq := "-j MASQUERADE"
	if s.RandomFully {
		masq += " --random-fully"
	}
	r.add("nat", "KUBE-POSTROUTING", comment("kubernetes service traffic requiring SNAT"), masq)
	r.add("nat", "KUBE-MARK-MASQ", "-j MARK --set-xmark "+mark+"/"+mark)
	return l
}

// protoNumber is a protocol's IP number, as -m ipvs --vproto prints it.
func protoNumber(proto string) int {
	return map[string]int{"tcp": 6, "udp": 17, "sctp": 132}[proto]
}
