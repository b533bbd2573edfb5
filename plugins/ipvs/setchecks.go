package ipvs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// kube-proxy's ipsets that hold a virtual address with its protocol and
// port (hash:ip,port): a virtual server's address must be in one of them,
// or KUBE-IPVS-FILTER rejects its new connections (and no rule marks them
// for masquerade).
var addressSets = []string{"CLUSTER-IP", "EXTERNAL-IP", "EXTERNAL-IP-LOCAL", "LOAD-BALANCER"}

// setName is kube-proxy's name of one of its ipsets for the plane's
// family: KUBE-CLUSTER-IP, or KUBE-6-CLUSTER-IP for IPv6.
func (p *Plane) setName(base string) string {
	return familySetName("KUBE-"+base, p.family)
}

// setChecks hold the virtual servers and kube-ipvs0 against kube-proxy's
// ipsets, where the node has them: a virtual address:port in none of the
// address sets, a NodePort's port not in KUBE-NODE-PORT-<protocol>, an
// address of kube-ipvs0 not in KUBE-IPVS-IPS are MissingSetMember; a
// member for which no virtual server (or address) is left is
// StaleSetMember. A missing member names the frontends it makes differ.
func setChecks(p *Plane, node string) []behavior.Finding {
	if p.sets == nil || p.sets.Sets[p.setName("CLUSTER-IP")] == nil {
		return nil // not kube-proxy's ipsets, or not read
	}
	var out []behavior.Finding
	missing := func(set, member, effect string, keys []string) {
		out = append(out, behavior.Finding{
			Type: behavior.MissingSetMember, Node: node, Frontends: keys,
			Expected: member + " in ipset " + set, Observed: "not in ipset " + set,
			Message: fmt.Sprintf("ipset %s lacks %s: %s", set, member, effect),
		})
	}
	stale := func(set, member, why string) {
		out = append(out, behavior.Finding{
			Type: behavior.StaleSetMember, Node: node,
			Expected: "no " + member + " in ipset " + set, Observed: member + " in ipset " + set,
			Message: fmt.Sprintf("ipset %s holds %s, but %s: kube-proxy removes such a member when it syncs", set, member, why),
		})
	}
	served := map[string]bool{}    // "ip,proto:port" of every virtual server
	nodePorts := map[string]bool{} // "proto:port" of the NodePort ones
	for _, f := range p.Frontends() {
		k := f.Key
		proto := strings.ToLower(k.Protocol)
		a, err := netip.ParseAddr(k.IP)
		if err != nil {
			continue
		}
		member := fmt.Sprintf("%s,%s:%d", a, proto, k.Port)
		served[member] = true
		if k.Kind == behavior.NodePort {
			nodePorts[fmt.Sprintf("%s:%d", proto, k.Port)] = true
			set := p.setName("NODE-PORT-" + strings.ToUpper(proto))
			dirs, show := []string{"dst"}, strconv.Itoa(int(k.Port))
			if proto == "sctp" {
				set, dirs, show = p.setName("NODE-PORT-SCTP-HASH"), []string{"dst", "dst"}, member
			}
			if in, ok := p.sets.Has(set, dirs, a, a, proto, 0, uint16(k.Port)); ok && !in {
				missing(set, show, "connections to the NodePort are not marked for masquerade", []string{k.String()})
			}
			continue
		}
		found, known := false, false
		for _, base := range addressSets {
			in, ok := p.sets.Has(p.setName(base), []string{"dst", "dst"}, a, a, proto, 0, uint16(k.Port))
			found, known = found || in, known || ok
		}
		if known && !found && p.isVIP(a) {
			missing(p.setName("CLUSTER-IP"), member, "it is in none of kube-proxy's address sets, so KUBE-IPVS-FILTER rejects its new connections", []string{k.String()})
		}
	}
	for _, base := range addressSets {
		set := p.sets.Sets[p.setName(base)]
		if set == nil {
			continue
		}
		for _, m := range set.Members {
			if !served[m.Text] {
				stale(set.Name, m.Text, "no IPVS virtual server has that address and port")
			}
		}
	}
	for _, proto := range []string{"TCP", "UDP"} {
		set := p.sets.Sets[p.setName("NODE-PORT-"+proto)]
		if set == nil || len(p.nodeAddrs) == 0 {
			continue
		}
		for _, m := range set.Members {
			if !nodePorts[strings.ToLower(proto)+":"+m.Text] {
				stale(set.Name, m.Text, "no IPVS virtual server of the node's addresses has that "+proto+" port")
			}
		}
	}
	// KUBE-IPVS-IPS lists the virtual addresses: one a virtual server has
	// and kube-ipvs0 lacks is MissingVIPAddress, one kube-ipvs0 has and no
	// virtual server is ExtraVIPAddress; the set is held against the
	// virtual servers' addresses.
	if ips := p.sets.Sets[p.setName("IPVS-IPS")]; ips != nil {
		virtual := map[string]bool{}
		for _, v := range p.table.Virtuals {
			if a := v.Addr.Addr(); v.Protocol != "" && !p.nodeAddrs[a] {
				virtual[a.String()] = true
			}
		}
		listed := map[string]bool{}
		for _, m := range ips.Members {
			listed[m.Text] = true
			if !virtual[m.Text] {
				stale(ips.Name, m.Text, "no IPVS virtual server has that address")
			}
		}
		for _, v := range p.vips {
			if a := v.Addr().String(); virtual[a] && !listed[a] {
				missing(ips.Name, a, "KUBE-IPVS-FILTER does not reject new connections to its ports no Service has", nil)
			}
		}
	}
	return out
}
