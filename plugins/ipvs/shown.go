package ipvs

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// A node's state without its IPVS table (a ticket's `ipset list`, or
// `ip addr show kube-ipvs0`) still shows what kube-proxy made in ipvs
// mode: its ipsets name each Service frontend (address, protocol and
// port) and kube-ipvs0 holds each Service address. Neither says where a
// connection goes: that is the virtual servers'. The plane is then read
// as "shown": its frontends are the sets' members, each going on in the
// IPVS table the state lacks (an unknown outcome, never a made-up one).

// cutSets is an ipset listing whose last set lists fewer members than
// its header counts: an error for a whole node's state (a member read as
// missing would be drift that is not there), but the members it shows are
// what a ticket shows.
type cutSets struct {
	*ParseError
	sets *IPSets
	note string
}

func (e *cutSets) Unwrap() error { return e.ParseError }

// parseShownSets reads ipsets given without the IPVS table: a listing cut
// short keeps the members it shows, with a note.
func parseShownSets(text string) (*IPSets, error) {
	s, err := ParseIPSets(text)
	var cut *cutSets
	if errors.As(err, &cut) {
		cut.sets.Notes = append(cut.sets.Notes, cut.note+": the dump ends there, and the other members are not known")
		return cut.sets, nil
	}
	return s, err
}

// frontendSets are kube-proxy's ipvs sets whose members are Service
// frontends, by name less the family's prefix (KUBE- or KUBE-6-), the
// main sets before their Local subsets; proto is the protocol of a
// bitmap:port set's ports.
var frontendSets = []struct {
	name  string
	kind  behavior.FrontendKind
	proto string
}{
	{"CLUSTER-IP", behavior.ClusterIP, ""},
	{"EXTERNAL-IP", behavior.ExternalIP, ""},
	{"LOAD-BALANCER", behavior.LoadBalancer, ""},
	{"NODE-PORT-TCP", behavior.NodePort, "TCP"},
	{"NODE-PORT-UDP", behavior.NodePort, "UDP"},
	{"NODE-PORT-SCTP-HASH", behavior.NodePort, ""},
	{"EXTERNAL-IP-LOCAL", behavior.ExternalIP, ""},
	{"LOAD-BALANCER-LOCAL", behavior.LoadBalancer, ""},
	{"NODE-PORT-LOCAL-TCP", behavior.NodePort, "TCP"},
	{"NODE-PORT-LOCAL-UDP", behavior.NodePort, "UDP"},
	{"NODE-PORT-LOCAL-SCTP-HASH", behavior.NodePort, ""},
}

// setName is kube-proxy's name of a set in a family: IPv6's have the
// prefix KUBE-6- and are cut to 31 characters, as ipset's names are.
func setName(family, name string) string {
	n := "KUBE-" + name
	if family == "IPv6" {
		n = "KUBE-6-" + name
	}
	if len(n) > 31 {
		n = n[:31]
	}
	return n
}

// shownFrontend is a frontend read off a set member, with the member.
type shownFrontend struct {
	key behavior.Key
	hop dataplane.Hop
}

// readShown reads the frontends off kube-proxy's sets of the family, and
// says in notes what the sets and kube-ipvs0 show beside them.
func (p *Plane) readShown() {
	seen := map[behavior.Key]bool{}
	var empty []string
	found := false
	for _, fs := range frontendSets {
		name := setName(p.family, fs.name)
		set := p.sets.set(name)
		if set == nil {
			continue
		}
		if f := set.family(); f != "" && f != inetOf(p.family) {
			continue
		}
		found = true
		if len(set.Members) == 0 {
			empty = append(empty, name)
		}
		for _, m := range set.Members {
			k, err := memberKey(set, m, fs.kind, fs.proto)
			if err != nil {
				p.shownNotes = append(p.shownNotes, fmt.Sprintf("line %d: set %s: member %q: %v; left out", m.Line, name, m.Text, err))
				continue
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			p.shown = append(p.shown, shownFrontend{key: k, hop: dataplane.Hop{Table: "ipset", Chain: name, Line: m.Line, Rule: name + " member " + m.Text}})
		}
	}
	if !found && p.sets != nil {
		p.shownNotes = append(p.shownNotes, fmt.Sprintf("the sets given hold none of kube-proxy's %s sets of Service frontends (%s, %s, …): no %s frontend can be read from them", p.family, setName(p.family, "CLUSTER-IP"), setName(p.family, "NODE-PORT-TCP"), p.family))
	}
	if len(empty) > 0 {
		p.shownNotes = append(p.shownNotes, fmt.Sprintf("%s: empty, so no %s Service frontend of theirs is on this node", strings.Join(empty, ", "), p.family))
	}
	p.shownNotes = append(p.shownNotes, p.otherFamilySets()...)
	if note := p.loopBackNote(); note != "" {
		p.shownNotes = append(p.shownNotes, note)
	}
}

// loopBackNote names the endpoints KUBE-LOOP-BACK holds: those on this
// node (kube-proxy masquerades one reaching itself through a Service);
// "" when it holds none.
func (p *Plane) loopBackNote() string {
	set := p.sets.set(setName(p.family, "LOOP-BACK"))
	if set == nil || dims(set.Type) != "apa" || set.family() != inetOf(p.family) {
		return ""
	}
	var eps []string
	seen := map[string]bool{}
	for _, m := range set.Members {
		e, _, err := parseEntry(m.Text, "apa", set.family(), 0)
		if err != nil || e[0].lo != e[0].hi || e[1].never || e[1].plo != e[1].phi {
			continue
		}
		ep := fmt.Sprintf("%s/%s", netip.AddrPortFrom(e[0].lo, e[1].plo), strings.ToUpper(e[1].proto))
		if !seen[ep] {
			seen[ep] = true
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (line %d) holds %d endpoints on this node, which kube-proxy masquerades when they reach themselves through a Service: %s; which Service each serves, the sets do not say", set.Name, set.Line, len(eps), strings.Join(eps, ", "))
}

// inetOf is ipset's family name of an IP family.
func inetOf(family string) string {
	if family == "IPv6" {
		return "inet6"
	}
	return "inet"
}

// set is the named set, nil when the sets or it are missing.
func (s *IPSets) set(name string) *IPSet {
	if s == nil {
		return nil
	}
	return s.Sets[name]
}

// otherFamilySets say which of kube-proxy's sets are the other family's,
// so that an answer with no frontend says why.
func (p *Plane) otherFamilySets() []string {
	other := "IPv6"
	if p.family == "IPv6" {
		other = "IPv4"
	}
	var names []string
	members := 0
	for _, fs := range frontendSets {
		if set := p.sets.set(setName(other, fs.name)); set != nil && set.family() == inetOf(other) {
			names = append(names, set.Name)
			members += len(set.Members)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s are kube-proxy's %s sets (%d members in all), not %s's: ask for %s to read them", strings.Join(names, ", "), other, members, p.family, other)}
}

// memberKey is the frontend a member of a frontend set stands for: an
// address, protocol and port ("10.96.0.1,tcp:443"), or a NodePort's port
// alone (bitmap:port, proto by the set's name).
func memberKey(set *IPSet, m Member, kind behavior.FrontendKind, proto string) (behavior.Key, error) {
	d := dims(set.Type)
	if d != "ap" && d != "b" {
		return behavior.Key{}, fmt.Errorf("set type %s is not kube-proxy's for it", set.Type)
	}
	e, _, err := parseEntry(m.Text, d, set.family(), set.netmask())
	if err != nil {
		return behavior.Key{}, err
	}
	port := e[0]
	k := behavior.Key{Kind: kind, Protocol: proto}
	if d == "ap" {
		if e[0].lo != e[0].hi {
			return behavior.Key{}, errors.New("a range of addresses, which kube-proxy does not add")
		}
		port = e[1]
		k.IP, k.Protocol = e[0].lo.String(), strings.ToUpper(port.proto)
	}
	if port.never || port.plo != port.phi {
		return behavior.Key{}, errors.New("not one port, which kube-proxy always adds")
	}
	k.Port = int32(port.plo)
	return k, nil
}

// shownLookup is the way of a packet to a frontend the sets show: on into
// the IPVS table, which the state lacks; nil for a packet to none.
func (p *Plane) shownLookup(pkt dataplane.Packet, env *dataplane.Env, o dataplane.WalkOptions) []dataplane.Branch {
	proto := strings.ToUpper(pkt.Protocol)
	for _, f := range p.shown {
		k := f.key
		if k.Protocol != proto || k.Port != int32(pkt.DstPort) {
			continue
		}
		if k.IP == "" && env != nil && env.IsLocal(pkt.Dst) || k.IP == pkt.Dst.String() {
			return []dataplane.Branch{{Probability: 1, Verdict: dataplane.Missing, Missing: missingTable, Hops: hops(o, f.hop)}}
		}
	}
	return nil
}

// missingTable is where a shown frontend's packets go on.
const missingTable = "the IPVS table (ipvsadm -Ln)"

// vipNotes say what kube-ipvs0's addresses show without the IPVS table:
// each is a Service address of the node whose ports and backends are not
// known. An address the sets show frontends of is said by those.
func (p *Plane) vipNotes() []string {
	if !p.vipsKnown {
		return nil
	}
	if len(p.vips) == 0 {
		return []string{fmt.Sprintf("kube-ipvs0 holds no %s address: no %s Service address is bound on this node", p.family, p.family)}
	}
	shown := map[string]bool{}
	for _, f := range p.shown {
		shown[f.key.IP] = true
	}
	var addrs []string
	for _, v := range p.vips {
		if !shown[v.Addr().String()] {
			addrs = append(addrs, v.Addr().String())
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("kube-ipvs0 holds %s: each is a Service address of this node (a ClusterIP, an external or a load-balancer IP; kube-ipvs0 does not tell which) whose ports, protocols and backends are not known: the virtual servers (ipvsadm -Ln) are needed for them", strings.Join(addrs, ", "))}
}

// shownNote says what the plane is read from when the IPVS table is
// missing ("" when it is there).
func (p *Plane) shownNote() string {
	if !p.noTable {
		return ""
	}
	var given []string
	if p.sets != nil {
		given = append(given, "kube-proxy's ipsets")
	}
	if p.vipsKnown {
		given = append(given, "kube-ipvs0's addresses")
	}
	what := "the frontends are the members of kube-proxy's sets of Service ports (KUBE-CLUSTER-IP, KUBE-NODE-PORT-*, KUBE-EXTERNAL-IP*, KUBE-LOAD-BALANCER*)"
	if p.sets == nil {
		what = "they show Service addresses, no port"
	}
	return fmt.Sprintf("only %s were given, not the IPVS table: %s; the virtual servers (ipvsadm -Ln) are needed for ports, backends, shares and affinity", strings.Join(given, " and "), what)
}

// kubeProxys says whether the sets hold one of kube-proxy's: one of ipvs
// mode's names, or its IPv6 proxier's (KUBE-6-…); kube-router's network
// policy sets (KUBE-SRC-…, KUBE-DST-…, on k3s) share only the prefix.
func (s *IPSets) kubeProxys() bool {
	if s == nil {
		return false
	}
	for name := range s.Sets {
		name = strings.Replace(name, "KUBE-6-", "KUBE-", 1)
		for _, k := range setKinds {
			if name == k.name || strings.HasPrefix(k.name, name) && len(name) == 31 {
				// An IPv6 name kube-proxy truncated to ipset's 31
				// characters.
				return true
			}
		}
	}
	return false
}
