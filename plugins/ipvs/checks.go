package ipvs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// vipChecks hold the virtual servers against the addresses bound on the
// node. IPVS takes a packet only at local input: a virtual server whose
// address is neither the node's nor on kube-ipvs0 never sees one (the
// packet is routed away), which is MissingVIPAddress for each of its
// frontends; an address on kube-ipvs0 that no virtual server has makes
// the node answer for an address nothing serves (ExtraVIPAddress).
func vipChecks(p *Plane, node string) []behavior.Finding {
	byAddr := map[netip.Addr][]string{}
	var order []netip.Addr
	for _, f := range p.Frontends() {
		a, err := netip.ParseAddr(f.Key.IP)
		if err != nil || p.nodeAddrs[a] || p.isVIP(a) {
			continue
		}
		if _, ok := byAddr[a]; !ok {
			order = append(order, a)
		}
		byAddr[a] = append(byAddr[a], f.Key.String())
	}
	var out []behavior.Finding
	for _, a := range order {
		keys := byAddr[a]
		out = append(out, behavior.Finding{
			Type: behavior.MissingVIPAddress, Node: node, Frontends: keys,
			Expected: fmt.Sprintf("%s bound on %s", a, Dummy),
			Observed: fmt.Sprintf("%s bound on no interface of the node", a),
			Rules:    virtualsAt(p, a),
			Message: fmt.Sprintf("IPVS has virtual servers at %s, but the address is not on %s (nor on any other interface): packets to it are not delivered locally, so IPVS never sees them and they are routed away (%s)",
				a, Dummy, strings.Join(keys, ", ")),
		})
	}
	served := map[netip.Addr]bool{}
	for _, v := range p.table.Virtuals {
		served[v.Addr.Addr()] = true
	}
	for _, v := range p.vips {
		if served[v.Addr()] {
			continue
		}
		out = append(out, behavior.Finding{
			Type: behavior.ExtraVIPAddress, Node: node,
			Expected: fmt.Sprintf("%s not on %s", v.Addr(), Dummy),
			Observed: fmt.Sprintf("%s on %s, with no virtual server", v, Dummy),
			Message: fmt.Sprintf("%s is bound on %s but no IPVS virtual server has it: the node accepts packets to that address itself, and kube-proxy removes such an address when it syncs (a leftover of a deleted Service, or of a sync that did not finish)",
				v.Addr(), Dummy),
		})
	}
	return out
}

// virtualsAt are the virtual servers at an address, as ipvsadm lists them.
func virtualsAt(p *Plane, a netip.Addr) []string {
	var out []string
	for _, v := range p.table.Virtuals {
		if v.Protocol != "" && v.Addr.Addr() == a {
			out = append(out, "ipvs "+v.String())
		}
	}
	return slices.Compact(out)
}

var _ dataplane.Causer = (*Plane)(nil)

// Causes are the real servers at weight 0: every scheduler passes over
// them. That is how kube-proxy drains an endpoint going away, and no
// trouble; for an endpoint still ready it is Weight0ReadyEndpoint, the
// cause of that endpoint getting no traffic (analysis keeps it only
// there). kube-proxy drains an endpoint in every virtual server of its
// Service at once, so one cause names all the virtual servers where the
// real server stands at weight 0: it then stands for the endpoint
// missing from each of the Service's frontends.
func (p *Plane) Causes(node string) []behavior.Finding {
	var out []behavior.Finding
	at := map[string]int{} // real server → its cause in out
	for _, v := range p.table.Virtuals {
		if v.Protocol == "" {
			continue
		}
		key := p.key(v)
		for _, r := range v.Reals {
			if r.Weight != 0 {
				continue
			}
			real := r.Addr.String()
			rules := []string{"ipvs " + v.String(), "ipvs " + v.Key() + " " + r.String()}
			if i, ok := at[real]; ok {
				f := &out[i]
				f.Frontends = append(f.Frontends, key.String())
				f.Rules = append(f.Rules, rules...)
				f.Message = fmt.Sprintf("the real server %s has weight 0 in %d virtual servers, so no new connection reaches it, but its endpoint is ready: kube-proxy sets weight 0 on an endpoint that is going away, and this drain was never undone (a restart of kube-proxy during one left it so, kubernetes#92019)", real, len(f.Frontends))
				continue
			}
			at[real] = len(out)
			out = append(out, behavior.Finding{
				Type: behavior.Weight0ReadyEndpoint, Node: node, Frontends: []string{key.String()}, Endpoint: real,
				Expected: fmt.Sprintf("%s at weight 1", r.Addr), Observed: fmt.Sprintf("%s at weight 0", r.Addr),
				Rules:   rules,
				Message: fmt.Sprintf("the real server %s of %s has weight 0, so no new connection reaches it, but its endpoint is ready: kube-proxy sets weight 0 on an endpoint that is going away, and this drain was never undone (a restart of kube-proxy during one left it so, kubernetes#92019)", real, v.Key()),
			})
		}
	}
	return out
}

// schedulerChecks: kube-proxy gives every virtual server one scheduler
// (--ipvs-scheduler), with the flags it sets for it; a virtual server
// whose scheduler or flags differ from the node's others was changed by
// hand (its shares then differ where weights or load count).
func schedulerChecks(p *Plane, node string) []behavior.Finding {
	count := map[string]int{}
	for _, v := range p.table.Virtuals {
		count[schedulerOf(v)]++
	}
	usual, n := "", 0
	for s, c := range count {
		if c > n || c == n && s < usual {
			usual, n = s, c
		}
	}
	if len(count) < 2 || n < 2 {
		return nil // one scheduler, or none the node agrees on
	}
	var out []behavior.Finding
	for _, v := range p.table.Virtuals {
		if s := schedulerOf(v); s != usual {
			out = append(out, behavior.Finding{
				Type: behavior.SchedulerMismatch, Node: node, Frontends: []string{p.key(v).String()},
				Expected: "scheduler " + usual, Observed: "scheduler " + s,
				Rules:   []string{"ipvs " + v.String()},
				Message: fmt.Sprintf("virtual server %s schedules with %s, but the node's other %d virtual servers with %s, as kube-proxy sets them all (--ipvs-scheduler): it was changed by hand", v.Key(), s, n, usual),
			})
		}
	}
	return out
}

// schedulerOf is a virtual server's scheduler with its flags.
func schedulerOf(v *Virtual) string {
	if len(v.SchedFlags) == 0 {
		return v.Scheduler
	}
	return v.Scheduler + " (" + strings.Join(v.SchedFlags, ",") + ")"
}
