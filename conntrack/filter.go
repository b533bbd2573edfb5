//go:build linux

package conntrack

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mdlayher/netlink"
	"github.com/ti-mo/netfilter"
	"golang.org/x/sys/unix"
)

// matcher is a checked Filter.
type matcher struct {
	family            string
	nfFamily          uint8
	proto             uint8
	hasProto          bool
	protoName         string
	origDst, replySrc []netip.Addr
	ports             []uint16
	zone              *uint16
	// Sets of the address lists, for long lists.
	origDstSet, replySrcSet map[netip.Addr]bool
}

func compileFilter(f Filter) (*matcher, error) {
	m := &matcher{origDst: f.OrigDst, replySrc: f.ReplySrc, ports: f.OrigDstPorts, zone: f.Zone}
	switch strings.ToLower(f.Family) {
	case "":
	case "ipv4":
		m.family = IPv4
	case "ipv6":
		m.family = IPv6
	default:
		return nil, fmt.Errorf("unknown family %q (want IPv4 or IPv6)", f.Family)
	}
	if f.Protocol != "" {
		n, ok := protoNumber(f.Protocol)
		if !ok {
			return nil, fmt.Errorf("unknown protocol %q", f.Protocol)
		}
		m.proto, m.hasProto, m.protoName = n, true, protoName(n)
	}
	m.origDstSet, m.replySrcSet = addrSet(f.OrigDst), addrSet(f.ReplySrc)
	if m.family == "" {
		// Addresses of one family imply it.
		fams := map[string]bool{}
		for _, a := range slices.Concat(f.OrigDst, f.ReplySrc) {
			fams[familyOf(a)] = true
		}
		if len(fams) == 1 && !fams[""] {
			for fam := range fams {
				m.family = fam
			}
		}
	}
	switch m.family {
	case IPv4:
		m.nfFamily = unix.AF_INET
	case IPv6:
		m.nfFamily = unix.AF_INET6
	}
	return m, nil
}

// addrSet returns a set of as when as is long enough to need one.
func addrSet(as []netip.Addr) map[netip.Addr]bool {
	if len(as) <= 8 {
		return nil
	}
	set := make(map[netip.Addr]bool, len(as))
	for _, a := range as {
		set[a] = true
	}
	return set
}

func inAddrs(a netip.Addr, list []netip.Addr, set map[netip.Addr]bool) bool {
	if set != nil {
		return set[a]
	}
	return len(list) == 0 || slices.Contains(list, a)
}

func (m *matcher) match(e *Entry) bool {
	return (m.family == "" || e.Family == m.family) &&
		(!m.hasProto || m.protoName == e.Protocol) &&
		inAddrs(e.Orig.Dst, m.origDst, m.origDstSet) &&
		(len(m.ports) == 0 || slices.Contains(m.ports, e.Orig.DstPort)) &&
		inAddrs(e.Reply.Src, m.replySrc, m.replySrcSet) &&
		(m.zone == nil || e.Zone == *m.zone)
}

// CTA_FILTER flags (net/netfilter/nf_internals.h).
const (
	filterIPSrc    = 1 << 0
	filterIPDst    = 1 << 1
	filterProtoNum = 1 << 3
	filterDstPort  = 1 << 5
)

// kernelFilter returns the dump request's filter attributes, nil if the
// kernel can filter nothing more than the family (the request's nfgenmsg
// family, 4.20+). The kernel (5.8+, CTA_FILTER) matches one value per
// field and needs the family, so a field goes to the kernel only when it
// has exactly one value: protocol, orig destination port (it needs the
// protocol; the kernel compares ports of tcp and udp only), and IPv4 orig
// destination and reply source addresses. Zone (6.8+, CTA_ZONE) goes when
// it is not 0: the kernel takes zone 0 as "any zone". Lists, IPv6
// addresses and zone 0 are filtered here only.
func (m *matcher) kernelFilter() ([]byte, error) {
	ae := netfilter.NewAttributeEncoder()
	used := false
	if m.zone != nil && *m.zone != 0 {
		ae.Uint16(ctaZone, *m.zone)
		used = true
	}
	var orig, reply uint32
	// IPv6 addresses stay out: the kernel's IPv6 address match is
	// inverted (ctnetlink_filter_match_tuple tests !ipv6_addr_cmp, seen on
	// 6.18: a filter on fd00::2 returns every entry but fd00::2's), and
	// entries the kernel drops cannot be found again here.
	one := func(as []netip.Addr) bool { return len(as) == 1 && as[0].Is4() && m.family == IPv4 }
	if m.nfFamily != 0 {
		if m.hasProto {
			orig |= filterProtoNum
			if len(m.ports) == 1 && hasPorts(m.proto) {
				orig |= filterDstPort
			}
		}
		if one(m.origDst) {
			orig |= filterIPDst
		}
		if one(m.replySrc) {
			reply |= filterIPSrc
		}
	}
	var ot Tuple
	if orig&filterIPDst != 0 {
		ot.Dst = m.origDst[0]
	}
	if orig&filterDstPort != 0 {
		ot.DstPort = m.ports[0]
	}
	var rt Tuple
	if reply != 0 {
		rt.Src = m.replySrc[0]
	}
	if orig|reply != 0 {
		putCTAFilter(ae, ot, rt, m.proto, orig, reply)
		used = true
	}
	if !used {
		return nil, nil
	}
	return ae.Encode()
}

// putCTAFilter encodes a CTA_FILTER with its tuples: the parts of orig and
// reply that the flags select.
func putCTAFilter(ae *netlink.AttributeEncoder, orig, reply Tuple, proto uint8, origFlags, replyFlags uint32) {
	if origFlags != 0 {
		putFilterTuple(ae, ctaTupleOrig, orig, proto, origFlags)
	}
	if replyFlags != 0 {
		putFilterTuple(ae, ctaTupleReply, reply, proto, replyFlags)
	}
	ae.Nested(ctaFilter, func(nae *netlink.AttributeEncoder) error {
		nae.ByteOrder = binary.NativeEndian // CTA_FILTER flags are host order
		nae.Uint32(1, origFlags)            // CTA_FILTER_ORIG_FLAGS
		nae.Uint32(2, replyFlags)           // CTA_FILTER_REPLY_FLAGS
		return nil
	})
}

// putFilterTuple encodes the parts of t that flags select.
func putFilterTuple(ae *netlink.AttributeEncoder, typ uint16, t Tuple, proto uint8, flags uint32) {
	ae.Nested(typ, func(nae *netlink.AttributeEncoder) error {
		if flags&(filterIPSrc|filterIPDst) != 0 {
			nae.Nested(ctaTupleIP, func(ip *netlink.AttributeEncoder) error {
				putAddr(ip, t.Src, false)
				putAddr(ip, t.Dst, true)
				return nil
			})
		}
		if flags&filterProtoNum != 0 {
			nae.Nested(ctaTupleProto, func(p *netlink.AttributeEncoder) error {
				p.Uint8(ctaProtoNum, proto)
				if flags&filterDstPort != 0 {
					p.Uint16(ctaProtoDstPort, t.DstPort)
				}
				return nil
			})
		}
		return nil
	})
}
