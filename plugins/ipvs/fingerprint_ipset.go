package ipvs

import (
	"fmt"
	"strings"

	"github.com/mdlayher/netlink"

	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// The ipsets' part of the digest: every set's type, family, revision and
// header options (hash size, maximum of members, netmask, ranges of a
// bitmap, default timeout, extensions), and its members (each one's
// attributes: addresses, ports, protocol, CIDR, comment, marks), read over
// netfilter netlink as ipset save reads them (IPSET_CMD_LIST, every set).
// Every set, not only kube-proxy's: the read takes them all, and the
// iptables rules a walk goes through may match any (a CNI's). Left out
// are the header's counts (members, references from iptables rules,
// memory) and a member's remaining timeout and packet and byte counters.
// Members are sorted: a hash set dumps them in the order of its buckets,
// which its random seed and its resizes decide; sets are kept by name.

// ipset's netlink protocol (include/uapi/linux/netfilter/ipset/ip_set.h).
const (
	nfnlSubsysIPSet = 6
	ipsetCmdList    = 7
	// ipsetProtocol is the protocol version asked for (IPSET_PROTOCOL_MIN,
	// as github.com/vishvananda/netlink speaks): the kernel then leaves
	// the sets' kernel indexes out of the dump.
	ipsetProtocol = 6

	ipsetAttrProtocol, ipsetAttrSetName, ipsetAttrData, ipsetAttrADT, ipsetAttrIndex = 1, 2, 7, 8, 11

	// A header's counts, kept by the kernel.
	ipsetAttrElements, ipsetAttrReferences, ipsetAttrMemSize = 24, 25, 26
	// A member's remaining timeout and counters.
	ipsetAttrTimeout, ipsetAttrBytes, ipsetAttrPackets = 6, 24, 25
)

// ipsetRecords dumps every ipset over a netfilter netlink socket of d: a
// record per set, its name, header and members.
func ipsetRecords(d ipvsnetlink.Dialer) ([][]byte, error) {
	c, err := ipvsnetlink.Open(d, ipvsnetlink.ProtoNetfilter)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// struct nfgenmsg (family, version, resource id), then the protocol.
	req, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: ipsetAttrProtocol, Data: []byte{ipsetProtocol}}})
	if err != nil {
		return nil, fmt.Errorf("asking for the ipsets: %w", err)
	}
	msgs, err := c.Dump(nfnlSubsysIPSet<<8|ipsetCmdList, append([]byte{afInet, 0, 0, 0}, req...))
	if err != nil {
		return nil, fmt.Errorf("listing the ipsets: %w", err)
	}
	var sets ipsetParts
	for _, m := range msgs {
		if len(m.Data) < 4 {
			return nil, fmt.Errorf("listing the ipsets: a message of %d bytes", len(m.Data))
		}
		if err := sets.add(m.Data[4:]); err != nil {
			return nil, fmt.Errorf("listing the ipsets: %w", err)
		}
	}
	return sets.records(), nil
}

// ipsetParts gathers the sets of a dump, where a large set's members
// come in several messages, each naming the set.
type ipsetParts struct {
	order []string
	sets  map[string]*ipsetPart
}

type ipsetPart struct {
	header  []byte
	members [][]byte
}

// add reads one message of a dump (its attributes).
func (s *ipsetParts) add(b []byte) error {
	var name string
	var head []byte
	var members [][]byte
	err := eachAttr(b, func(typ uint16, payload, raw []byte) (err error) {
		switch typ {
		case ipsetAttrProtocol, ipsetAttrIndex:
		case ipsetAttrSetName:
			name = strings.TrimRight(string(payload), "\x00")
		case ipsetAttrData:
			head, err = withoutAttrs(appendRecord(head, []byte{ipsetAttrData}), payload, func(t uint16) bool {
				return t == ipsetAttrElements || t == ipsetAttrReferences || t == ipsetAttrMemSize
			})
		case ipsetAttrADT:
			err = eachAttr(payload, func(typ uint16, member, _ []byte) error {
				if typ != ipsetAttrData {
					return fmt.Errorf("an attribute %d among a set's members", typ)
				}
				m, err := withoutAttrs(nil, member, func(t uint16) bool {
					return t == ipsetAttrTimeout || t == ipsetAttrBytes || t == ipsetAttrPackets
				})
				members = append(members, m)
				return err
			})
		default:
			// The type's name, the family, the revision, flags.
			head = appendRecord(head, raw)
		}
		return err
	})
	if err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("a message without a set's name")
	}
	if s.sets == nil {
		s.sets = map[string]*ipsetPart{}
	}
	p := s.sets[name]
	if p == nil {
		p = &ipsetPart{}
		s.sets[name] = p
		s.order = append(s.order, name)
	}
	p.header = append(p.header, head...)
	p.members = append(p.members, members...)
	return nil
}

// records are a record per set: its name, header and sorted members.
func (s *ipsetParts) records() [][]byte {
	recs := make([][]byte, 0, len(s.order))
	for _, name := range s.order {
		p := s.sets[name]
		rec := appendRecord(appendRecord(nil, []byte(name)), p.header)
		recs = append(recs, sortedRecords(rec, p.members))
	}
	return recs
}
