package ipvs

import (
	"errors"
	"net/netip"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/snapshot"
)

// Loader reads a node's IPVS table (ipvsadm -Ln or ipvsadm-save -n) as
// the ipvs plane of one family.
type Loader struct {
	// StateDir is where a repair's write keeps its journal ("":
	// DefaultStateDir).
	StateDir string
}

var _ dataplane.Loader = Loader{}

// Mode is "ipvs".
func (Loader) Mode() string { return "ipvs" }

// Wants names the dump the plane reads.
func (Loader) Wants(family string) string {
	return "IPVS table with " + family + " virtual servers (collect it with ipvsadm -Ln or ipvsadm-save -n)"
}

// Load parses the node's IPVS dumps and keeps the virtual servers of the
// family (firewall-mark services, which have no address, with either),
// with what else of ipvs mode the node's state holds: the iptables rules
// of the family, the ipsets and the addresses on kube-ipvs0. A node
// without an IPVS dump has no ipvs plane (nil).
func (Loader) Load(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	var p *Plane
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Collector != CollectorIPVS {
			continue
		}
		t, err := Parse(d.Text)
		if err != nil {
			return nil, dumpError(ns.Name, d, err)
		}
		if p == nil {
			p = &Plane{table: &Table{}, family: family}
		}
		p.table.Notes = append(p.table.Notes, t.Notes...)
		p.table.hidden += t.hidden
		for _, v := range t.Virtuals {
			if v.Protocol == "" || v.Addr.Addr().Is4() == (family == "IPv4") {
				p.table.Virtuals = append(p.table.Virtuals, v)
			}
		}
	}
	if p == nil {
		return loadShown(ns, family)
	}
	if err := p.loadRest(ns); err != nil {
		return nil, err
	}
	p.digestShared(ns)
	return p, nil
}

// loadShown reads a node's state without an IPVS table but with ipvs
// mode's ipsets or kube-ipvs0's addresses (a ticket's paste): the plane of
// what they show (see shown.go). A state that also holds the family's
// iptables rules is left to the iptables plane, as before (nil).
func loadShown(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	has := false
	for i := range ns.Dumps {
		c := ns.Dumps[i].Collector
		has = has || c == CollectorIPSet || c == CollectorKubeIPVS0
	}
	if !has {
		return nil, nil
	}
	p := &Plane{table: &Table{}, family: family, noTable: true}
	if err := p.loadRest(ns); err != nil {
		return nil, err
	}
	if p.rules != nil {
		return nil, nil
	}
	p.readShown()
	return p, nil
}

// loadRest reads the parts of ipvs mode beside the IPVS table.
func (p *Plane) loadRest(ns *snapshot.NodeState) error {
	rules, err := iptables.Loader{}.Load(ns, p.family)
	if err != nil {
		return err
	}
	if ipt, ok := rules.(*iptables.Plane); ok && ipt != nil {
		p.rules = ipt
	}
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		switch d.Collector {
		case CollectorIPSet:
			parse := ParseIPSets
			if p.noTable {
				parse = parseShownSets
			}
			sets, err := parse(d.Text)
			if err != nil {
				return dumpError(ns.Name, d, err)
			}
			if p.sets == nil {
				p.sets = &IPSets{Sets: map[string]*IPSet{}}
			}
			p.sets.Notes = append(p.sets.Notes, sets.Notes...)
			for name, set := range sets.Sets {
				p.sets.Sets[name] = set
			}
		case CollectorKubeIPVS0:
			ifs, err := ParseIfAddrs(d.Text)
			if err != nil {
				return dumpError(ns.Name, d, err)
			}
			if _, ok := ifs[Dummy]; !ok && p.noTable {
				p.shownNotes = append(p.shownNotes, "the addresses given ("+d.Origin+") show no kube-ipvs0 interface")
				continue
			}
			p.vipsKnown = true
			for _, a := range ifs[Dummy] {
				if a.Addr().Is4() == (p.family == "IPv4") {
					p.vips = append(p.vips, a)
					if p.vipSet == nil {
						p.vipSet = map[netip.Addr]bool{}
					}
					p.vipSet[a.Addr()] = true
				}
			}
		}
	}
	p.nodeAddrs = map[netip.Addr]bool{}
	for _, a := range ns.Addresses {
		if ip, err := netip.ParseAddr(a); err == nil && !p.isVIP(ip) {
			p.nodeAddrs[ip] = true
		}
	}
	return nil
}

// Dummy is the interface ipvs mode binds its virtual addresses on.
const Dummy = "kube-ipvs0"

// dumpError names the node and dump of a parse error, and its position.
func dumpError(node string, d *snapshot.Dump, err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return dataplane.NewDumpError(node, d, pe.Line, pe.Col, pe.Msg, err)
	}
	return dataplane.NewDumpError(node, d, 0, 0, "", err)
}

// Dumps implements dataplane.Declarer: the IPVS table, the ipsets ipvs
// mode's iptables rules match, and the addresses on kube-ipvs0 (the
// iptables rules themselves are the iptables plane's dumps).
func (Loader) Dumps() []dataplane.DumpKind {
	return []dataplane.DumpKind{
		{Collector: CollectorIPVS, Flag: "ipvsadm", Help: "Import: the node's IPVS table (ipvsadm -Ln or ipvsadm-save -n, numeric)",
			Tools: []dataplane.DumpTool{{What: "the IPVS table", Argv: []string{"ipvsadm", "-Ln"}}}},
		{Collector: CollectorIPSet, Flag: "ipset", Help: "Import: the node's ipsets (ipset save or ipset list), for ipvs mode", Optional: true,
			Tools: []dataplane.DumpTool{{What: "the ipset state", Argv: []string{"ipset", "save"}}}},
		{Collector: CollectorKubeIPVS0, Flag: "kube-ipvs0", Help: "Import: the addresses on kube-ipvs0 (ip addr show dev kube-ipvs0, or ip -j addr show), for ipvs mode",
			Tools: []dataplane.DumpTool{{What: "kube-ipvs0's address list", Argv: []string{"ip", "addr", "show", "dev", "kube-ipvs0"}}}},
	}
}

// PayloadForm implements dataplane.PayloadNamer.
func (Loader) PayloadForm() string {
	return "writes, in the forms of ipset restore, ipvsadm-restore, ip addr and iptables-restore --noflush (made over netlink)"
}
