package iptables

import (
	"slices"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// discover lists the frontends the rules handle: destinations (address,
// port, protocol) that kube-proxy's dispatch chains match on, and NodePorts.
// Kinds come from kube-proxy's comment, else from the chain the rule jumps
// to.
func discover(rs *Ruleset) (out []behavior.Frontend) {
	seen := map[behavior.Key]bool{}
	// told are the destinations whose kind a rule's comment tells; a kind
	// only guessed from the chain (a "has no local endpoints" rule of
	// KUBE-EXTERNAL-SERVICES) gives way to it.
	type dest struct {
		ip, proto string
		port      int32
	}
	told := map[dest]bool{}
	guessed := map[behavior.Key]bool{}
	add := func(k behavior.Key, r *Rule) {
		if seen[k] {
			return
		}
		seen[k] = true
		if k.IP != "" {
			if kindTold(r) {
				told[dest{k.IP, k.Protocol, k.Port}] = true
			} else {
				guessed[k] = true
			}
		}
		spn, _ := SPNFromComment(r.Comment())
		out = append(out, behavior.Frontend{Key: k, Service: spn})
	}
	defer func() {
		out = slices.DeleteFunc(out, func(f behavior.Frontend) bool {
			return guessed[f.Key] && told[dest{f.Key.IP, f.Key.Protocol, f.Key.Port}]
		})
	}()
	for _, e := range unenteredClusterIPs(rs) {
		if k := (behavior.Key{Kind: behavior.ClusterIP, IP: e.ip, Port: e.port, Protocol: strings.ToUpper(e.proto)}); !seen[k] {
			seen[k] = true
			out = append(out, behavior.Frontend{Key: k, Service: e.spn})
		}
	}
	for _, tname := range []string{"nat", "filter"} {
		t, ok := rs.Tables[tname]
		if !ok {
			continue
		}
		for _, c := range t.chains() {
			cname := c.Name
			dispatch := cname == "KUBE-SERVICES" || cname == "KUBE-EXTERNAL-SERVICES" || cname == "KUBE-PROXY-FIREWALL" ||
				strings.HasPrefix(cname, "KUBE-PORTALS-")
			nodePorts := (tname == "nat" && cname == "KUBE-NODEPORTS") || strings.HasPrefix(cname, "KUBE-NODEPORT-") ||
				cname == "KUBE-EXTERNAL-SERVICES"
			if !dispatch && !nodePorts {
				continue
			}
			for _, r := range c.Rules() {
				proto, port, ok := protoPort(r)
				if !ok {
					continue
				}
				if r.Dest != nil && !r.Dest.Negate && r.Dest.Prefix.IsSingleIP() && !r.Dest.Prefix.Addr().IsLoopback() {
					ip := r.Dest.Prefix.Addr().String()
					add(behavior.Key{Kind: kindOf(r), IP: ip, Port: port, Protocol: proto}, r)
					continue
				}
				if nodePorts && (r.Dest == nil || r.Dest.Prefix.Addr().IsLoopback()) {
					if cname == "KUBE-EXTERNAL-SERVICES" && !hasDstLocal(r) {
						continue
					}
					add(behavior.Key{Kind: behavior.NodePort, Port: port, Protocol: proto}, r)
				}
			}
		}
	}
	return out
}

func protoPort(r *Rule) (string, int32, bool) {
	if r.Protocol == nil || r.Protocol.Negate {
		return "", 0, false
	}
	proto := strings.ToUpper(r.Protocol.Name)
	if proto != "TCP" && proto != "UDP" && proto != "SCTP" {
		return "", 0, false
	}
	m, ok := r.Match(strings.ToLower(proto))
	if !ok {
		return "", 0, false
	}
	o, ok := m.Option("dport")
	if !ok || o.Negate || len(o.Args) == 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(o.Args[0], 10, 16)
	if err != nil {
		return "", 0, false
	}
	return proto, int32(n), true
}

func hasDstLocal(r *Rule) bool {
	m, ok := r.Match("addrtype")
	if !ok {
		return false
	}
	o, ok := m.Option("dst-type")
	return ok && !o.Negate && len(o.Args) > 0 && o.Args[0] == "LOCAL"
}

// kindTold reports whether kube-proxy's comment on r names the kind of
// its destination.
func kindTold(r *Rule) bool {
	c := r.Comment()
	return strings.HasSuffix(c, " external IP") || strings.HasSuffix(c, " loadbalancer IP") ||
		strings.HasSuffix(c, " cluster IP") || strings.Contains(c, "traffic not accepted by")
}

func kindOf(r *Rule) behavior.FrontendKind {
	c := r.Comment()
	switch {
	case strings.HasSuffix(c, " external IP"):
		return behavior.ExternalIP
	case strings.HasSuffix(c, " loadbalancer IP"):
		return behavior.LoadBalancer
	case strings.HasSuffix(c, " cluster IP"):
		return behavior.ClusterIP
	case strings.Contains(c, "traffic not accepted by"):
		return behavior.LoadBalancer
	}
	switch {
	case strings.HasPrefix(r.Target, PrefixFW):
		return behavior.LoadBalancer
	case strings.HasPrefix(r.Target, PrefixEXT):
		return behavior.ExternalIP
	}
	if r.Chain == "KUBE-EXTERNAL-SERVICES" {
		return behavior.ExternalIP
	}
	return behavior.ClusterIP
}

// portless notes the rules of kube-proxy's dispatch chains that send one
// address to a Service's chain on every port (no --dport: a simplified
// rule in an excerpt, or a hand-made one): they are no frontend of one
// port, so explain cannot list them, and says so instead of leaving them
// out silently.
func portless(rs *Ruleset) []string {
	if rs.Excerpt == "" {
		// kube-proxy writes none: only a simplified rule in an excerpt
		// lacks it, and a whole dump's dispatch chains are not read again
		// (a large node's are read lazily).
		return nil
	}
	var out []string
	for _, tname := range []string{"nat", "filter"} {
		t, ok := rs.Tables[tname]
		if !ok {
			continue
		}
		for _, cname := range []string{"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"} {
			c := t.Chain(cname)
			if c == nil {
				continue
			}
			for _, r := range c.Rules() {
				if _, _, ok := protoPort(r); ok || r.Dest == nil || r.Dest.Negate || !r.Dest.Prefix.IsSingleIP() || !serviceChain(r.Target) {
					continue
				}
				out = append(out, r.Ref()+": sends "+r.Dest.Prefix.Addr().String()+" to "+r.Target+
					" on every port and protocol it matches (no --dport), so it is no frontend of one port and explain does not list it; trace a packet to follow it")
			}
		}
	}
	return out
}

// serviceChain reports whether a chain name is one of a Service's own
// chains in kube-proxy's layouts.
func serviceChain(name string) bool {
	for _, p := range []string{PrefixSVC, PrefixFW, PrefixEXT, "KUBE-SVL-", "KUBE-XLB-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
