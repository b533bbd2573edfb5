package nftables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// Frontends lists the frontends kube-proxy's maps hold: service-ips,
// firewall-ips and no-endpoint-services (address . protocol . port), and
// service-nodeports and no-endpoint-nodeports (protocol . port) on the
// addresses the rule that consults them allows.
func (p *Plane) Frontends() []behavior.Frontend {
	fs, _ := p.listFrontends()
	return fs
}

// listFrontends is discover's answer, made once.
func (p *Plane) listFrontends() ([]behavior.Frontend, []string) {
	p.frontendsOnce.Do(func() { p.frontends, p.frontendNotes = p.discover() })
	return slices.Clone(p.frontends), p.frontendNotes
}

func (p *Plane) discover() ([]behavior.Frontend, []string) {
	t := p.kp
	if t == nil {
		return nil, nil
	}
	n := 0
	for _, s := range t.Sets {
		n += len(s.Elements)
	}
	found := make([]foundFrontend, 0, n)
	var notes, ambiguous []string
	add := func(k behavior.Key, svc string) {
		found = append(found, foundFrontend{key: k, service: svc, seq: len(found)})
	}
	clusterIPs := map[netip.Addr]bool{}
	if s := t.Set(setClusterIPs); s != nil {
		clusterIPs = make(map[netip.Addr]bool, len(s.Elements))
		for _, el := range s.Elements {
			if a, ok := litAddr(el.Key); ok {
				clusterIPs[a] = true
			}
		}
	}
	type addrPort struct {
		ip    netip.Addr
		proto string
		port  int32
	}
	firewalled := map[addrPort]bool{}
	if s := t.Set(mapFirewallIPs); s != nil {
		for _, el := range s.Elements {
			if ip, proto, port, ok := ipProtoPort(el.Key); ok {
				firewalled[addrPort{ip, proto, port}] = true
			}
		}
	}
	for _, name := range []string{mapServiceIPs, mapFirewallIPs, mapNoEndpointServices} {
		s := t.Set(name)
		if s == nil {
			continue
		}
		for _, el := range s.Elements {
			a, proto, port, ok := ipProtoPort(el.Key)
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: element %s of %s is not address . protocol . port; skipped", t.ID(), el, name))
				continue
			}
			ip := a.String()
			kind, sure := frontendKind(el, name, clusterIPs[a], firewalled[addrPort{a, proto, port}])
			if text := fmt.Sprintf("%s:%d/%s", ip, port, proto); !sure && !slices.Contains(ambiguous, text) {
				// An address in two maps (service-ips and
				// no-endpoint-services) is named once.
				ambiguous = append(ambiguous, text)
			}
			add(behavior.Key{Kind: kind, IP: ip, Port: port, Protocol: proto}, serviceOf(el))
		}
	}
	for _, name := range []string{mapServiceNodePorts, mapNoEndpointNodePorts} {
		s := t.Set(name)
		if s == nil || len(s.Elements) == 0 {
			continue
		}
		addrs, anyAddr, found := nodePortAddrs(t, name)
		switch {
		case !found:
			notes = append(notes, fmt.Sprintf("%s: no rule consults map %s: its %d NodePorts are open on no address", t.ID(), name, len(s.Elements)))
			continue
		case !anyAddr && len(addrs) == 0:
			notes = append(notes, fmt.Sprintf("%s: map %s holds %d NodePorts, but the addresses its rule allows (set nodeport-ips, nodePortAddresses) are none: no address accepts them",
				t.ID(), name, len(s.Elements)))
		}
		for _, el := range s.Elements {
			c, ok := el.Key.(*Concat)
			var proto string
			var port int32
			if ok && len(c.Parts) == 2 {
				proto, port, ok = protoPort(c.Parts[0], c.Parts[1])
			}
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: element %s of %s is not protocol . port; skipped", t.ID(), el, name))
				continue
			}
			if anyAddr {
				add(behavior.Key{Kind: behavior.NodePort, Port: port, Protocol: proto}, serviceOf(el))
			}
			for _, a := range addrs {
				add(behavior.Key{Kind: behavior.NodePort, IP: a, Port: port, Protocol: proto}, serviceOf(el))
			}
		}
	}
	if len(ambiguous) > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s taken as external IPs: kube-proxy's maps do not tell an external IP from a load-balancer IP without loadBalancerSourceRanges",
			t.ID(), strings.Join(ambiguous, ", ")))
	}
	return uniqueFrontends(found), notes
}

// foundFrontend is a frontend a map element names, the seq'th found.
type foundFrontend struct {
	key     behavior.Key
	service string
	seq     int
}

// uniqueFrontends are the frontends found, in key order, one per key: the
// Service of a key named more than once is the first one named.
func uniqueFrontends(found []foundFrontend) []behavior.Frontend {
	// Sorted (by key, then in the order found) are the few bytes of the
	// keys, not whole frontends; a key's elements are then side by side.
	slices.SortFunc(found, func(a, b foundFrontend) int {
		if c := behavior.CompareKeys(a.key, b.key); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	out := make([]behavior.Frontend, 0, len(found))
	for i, f := range found {
		switch {
		case i == 0 || f.key != found[i-1].key:
			out = append(out, behavior.Frontend{Key: f.key, Service: f.service})
		case out[len(out)-1].Service == "":
			out[len(out)-1].Service = f.service
		}
	}
	return out
}

// frontendKind tells the kind of an address frontend; sure is false when
// the maps cannot tell an external IP from a load-balancer IP.
func frontendKind(el *Element, mapName string, clusterIP, firewalled bool) (behavior.FrontendKind, bool) {
	c := el.Comment
	switch {
	case strings.HasSuffix(c, " cluster IP"):
		return behavior.ClusterIP, true
	case strings.HasSuffix(c, " external IP"):
		return behavior.ExternalIP, true
	case strings.HasSuffix(c, " loadbalancer IP"):
		return behavior.LoadBalancer, true
	case mapName == mapFirewallIPs || firewalled:
		return behavior.LoadBalancer, true
	case clusterIP:
		return behavior.ClusterIP, true
	}
	if v, ok := el.Data.(*Verdict); ok {
		switch perServicePrefix(v.Target) {
		case prefixService, prefixLocal:
			return behavior.ClusterIP, true
		case prefixFirewall:
			return behavior.LoadBalancer, true
		}
	}
	return behavior.ExternalIP, false
}

// serviceOf names the service port from the element's comment or the
// chain its verdict goes to.
func serviceOf(el *Element) string {
	if looksLikeSPN(el.Comment) {
		return el.Comment
	}
	if v, ok := el.Data.(*Verdict); ok {
		if spn, _, ok := SPNFromName(v.Target); ok {
			return spn
		}
	}
	return ""
}

func ipProtoPort(e Expr) (netip.Addr, string, int32, bool) {
	c, ok := e.(*Concat)
	if !ok || len(c.Parts) != 3 {
		return netip.Addr{}, "", 0, false
	}
	a, ok := litAddr(c.Parts[0])
	if !ok {
		return netip.Addr{}, "", 0, false
	}
	proto, port, ok := protoPort(c.Parts[1], c.Parts[2])
	return a, proto, port, ok
}

func protoPort(pe, ne Expr) (string, int32, bool) {
	pl, ok1 := pe.(*Literal)
	nl, ok2 := ne.(*Literal)
	if !ok1 || !ok2 {
		return "", 0, false
	}
	pn, ok := litInt(pl.Text)
	if !ok {
		return "", 0, false
	}
	proto := strings.ToUpper(protoName(pn))
	if proto != "TCP" && proto != "UDP" && proto != "SCTP" {
		return "", 0, false
	}
	n, ok := litInt(nl.Text)
	if !ok || n == 0 || n > 65535 {
		return "", 0, false
	}
	return proto, int32(n), true
}

// nodePortAddrs reads, off the rules that consult a NodePort map, the
// addresses it applies to: the elements of the set "ip daddr @set" names
// (kube-proxy's nodeport-ips), or any local address ("fib daddr type
// local"). found is false when no rule consults the map.
func nodePortAddrs(t *Table, mapName string) (addrs []string, anyAddr, found bool) {
	seen := map[string]bool{}
	for _, c := range t.chainsMaybe(markSetRef) {
		for _, r := range c.rules() {
			if !consults(r, mapName) {
				continue
			}
			found = true
			restricted := false
			for _, st := range r.Stmts {
				m, ok := st.(*Match)
				if !ok || m.Op == "!=" {
					continue
				}
				if pl, ok := m.Left.(*Payload); !ok || pl.Field != "daddr" {
					continue
				}
				restricted = true
				var keys []Expr
				switch x := m.Right.(type) {
				case *SetRef:
					if s := t.Set(x.Name); s != nil {
						for _, el := range s.Elements {
							keys = append(keys, el.Key)
						}
					}
				case *AnonSet:
					for _, el := range x.Elems {
						keys = append(keys, el.Key)
					}
				default:
					keys = []Expr{x}
				}
				for _, k := range keys {
					if a, ok := litAddr(k); ok && !seen[a.String()] {
						seen[a.String()] = true
						addrs = append(addrs, a.String())
					}
				}
			}
			// Unrestricted, or only "fib daddr type local": every local
			// address.
			anyAddr = anyAddr || !restricted
		}
	}
	return addrs, anyAddr, found
}

func consults(r *Rule, mapName string) bool {
	for _, st := range r.Stmts {
		if v, ok := st.(*VMap); ok {
			if ref, ok := v.Data.(*SetRef); ok && ref.Name == mapName {
				return true
			}
		}
	}
	return false
}
