package ipvs

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/snapshot"
)

// For a node agent's next observation (dataplane.ObserveMemo), ipvs
// mode's state divides into its virtual servers, which the walks to a
// Service's addresses look up at local input (iptables'
// Extensions.LocalInPart tells a walk scope which), each a part of its
// own, and everything else, which any walk may read: the iptables rules
// (without their comments and counters), the ipsets, the addresses on
// kube-ipvs0 and the node's. A virtual server's part is what the lookup
// reads of it: its scheduler, flags and persistence, and its real servers'
// addresses, forwarding and weights; not their connection counts, which
// traffic moves, nor its line in the dump.

var _ dataplane.PartedState = (*Plane)(nil)

// StateParts implements dataplane.PartedState. A plane whose walks are
// the IPVS table's alone (Unchecked), or that consult another component's
// nftables tables (a gate), is not divided.
func (p *Plane) StateParts(env *dataplane.Env) (dataplane.StateParts, bool) {
	if p.Unchecked() != "" || !p.sharedKnown || p.gates != nil && p.gates.Gate(env) != nil {
		return dataplane.StateParts{}, false
	}
	parts := make(map[uint64]uint64, len(p.table.Virtuals))
	var b []byte
	for _, v := range p.table.Virtuals {
		id := virtualPart(v.Protocol, v.Addr)
		b = appendVirtual(b[:0], v)
		// Two virtual servers of one key (two dumps of one state) are both.
		parts[id] = parts[id]*1099511628211 + xxhash.Sum64(b)
	}
	return dataplane.StateParts{Shared: p.shared, Parts: parts}, true
}

// KnownClean implements dataplane.PartedState: a state read in full has
// nothing left to read.
func (p *Plane) KnownClean(map[uint64]uint64) {}

// Clean implements dataplane.PartedState: nothing is read late.
func (p *Plane) Clean() bool { return false }

// virtualPart names the part of the virtual server of a protocol and
// address (the firewall-mark ones, which no lookup reads, share one).
func virtualPart(protocol string, addr netip.AddrPort) uint64 {
	return xxhash.Sum64String("ipvs " + strings.ToUpper(protocol) + " " + addr.String())
}

// lookupPart is the part a lookup of pkt at local input reads: the
// virtual server of its protocol and destination, there or not.
func lookupPart(pkt iptables.Packet) uint64 {
	return virtualPart(pkt.Protocol, netip.AddrPortFrom(pkt.Dst, pkt.DstPort))
}

// appendVirtual appends what a lookup reads of v.
func appendVirtual(b []byte, v *Virtual) []byte {
	b = append(b, v.Key()...)
	b = append(b, 0)
	b = append(b, v.Scheduler...)
	for _, f := range v.SchedFlags {
		b = append(b, ',')
		b = append(b, f...)
	}
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(v.Persistent))
	b = append(b, v.Netmask...)
	b = append(b, 0, flagByte(v.OnePacket))
	for _, r := range v.Reals {
		b = r.Addr.AppendTo(b)
		b = append(b, 0)
		b = append(b, r.Forward...)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Weight))
		b = append(b, flagByte(r.Redacted), '\n')
	}
	return b
}

func flagByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// digestShared digests, for StateParts, what every walk may read beside
// the virtual servers: the node's addresses, the iptables dumps as their
// plane compares them (iptables.DigestText), the ipsets and kube-ipvs0's
// addresses as read, and what the IPVS table's reading noted.
func (p *Plane) digestShared(ns *snapshot.NodeState) {
	h := xxhash.New()
	h.WriteString("ipvs\x00" + p.family + "\x00")
	h.WriteString(strings.Join(ns.Addresses, ",") + "\x00")
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		switch d.Collector {
		case iptables.CollectorSave, iptables.CollectorSave6:
			h.WriteString(d.Collector + "\x00" + d.Family + "\x00" + d.Backend + "\x00")
			iptables.DigestText(h, d.Text)
		case CollectorIPSet, CollectorKubeIPVS0:
			h.WriteString(d.Collector + "\x00" + d.Text + "\x00")
		}
	}
	h.WriteString(strings.Join(p.table.Notes, "\n"))
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(p.table.hidden)))
	p.shared, p.sharedKnown = h.Sum64(), true
}
