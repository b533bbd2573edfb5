package ipvs

import (
	"errors"
	"net/netip"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// Loader reads a node's IPVS table (ipvsadm -Ln or ipvsadm-save -n) as
// the ipvs plane of one family.
type Loader struct{}

var _ dataplane.Loader = Loader{}

// Mode is "ipvs".
func (Loader) Mode() string { return "ipvs" }

// Wants names the dump the plane reads.
func (Loader) Wants(family string) string {
	return "IPVS table with " + family + " virtual servers (collect it with ipvsadm -Ln or ipvsadm-save -n)"
}

// Load parses the node's IPVS dumps and keeps the virtual servers of the
// family (firewall-mark services, which have no address, with either). A
// node without an IPVS dump has no ipvs plane (nil).
func (Loader) Load(ns *snapshot.NodeState, family string) (dataplane.Plane, error) {
	var p *Plane
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Collector != snapshot.CollectorIPVS {
			continue
		}
		t, err := Parse(d.Text)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				return nil, dataplane.NewDumpError(ns.Name, d, pe.Line, pe.Col, pe.Msg, err)
			}
			return nil, dataplane.NewDumpError(ns.Name, d, 0, 0, "", err)
		}
		if p == nil {
			p = &Plane{table: &Table{}, family: family, nodeAddrs: nodeAddrs(ns)}
		}
		p.table.Notes = append(p.table.Notes, t.Notes...)
		for _, v := range t.Virtuals {
			if v.Protocol == "" || v.Addr.Addr().Is4() == (family == "IPv4") {
				p.table.Virtuals = append(p.table.Virtuals, v)
			}
		}
	}
	if p == nil {
		return nil, nil
	}
	return p, nil
}

// nodeAddrs are the node's own addresses, as the snapshot knows them: a
// virtual server on one of them is a NodePort.
func nodeAddrs(ns *snapshot.NodeState) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, a := range ns.Addresses {
		if ip, err := netip.ParseAddr(a); err == nil {
			out[ip] = true
		}
	}
	return out
}
