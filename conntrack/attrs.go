//go:build linux

package conntrack

import (
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
)

// More ctnetlink attribute types.
const (
	ctaTupleIP      = 1
	ctaTupleProto   = 2
	ctaIPv4Src      = 1
	ctaIPv6Src      = 3
	ctaProtoNum     = 1
	ctaProtoSrcPort = 2
	ctaProtoDstPort = 3
	ctaProtoICMPID  = 4 // +3 for icmpv6: ID 7, TYPE 8, CODE 9
	ctaProtoICMPTyp = 5
	ctaProtoICMPCod = 6
	ctaStatsEntries = 1 // CTA_STATS_GLOBAL_ENTRIES

	statusSeenReply = 1 << 1
	statusAssured   = 1 << 2
	statusConfirmed = 1 << 3
)

// putTuple encodes a whole tuple (CTA_TUPLE_ORIG or CTA_TUPLE_REPLY).
func putTuple(ae *netlink.AttributeEncoder, typ uint16, t Tuple, proto uint8, icmp ICMP) {
	ae.Nested(typ, func(nae *netlink.AttributeEncoder) error {
		nae.Nested(ctaTupleIP, func(ip *netlink.AttributeEncoder) error {
			putAddr(ip, t.Src, false)
			putAddr(ip, t.Dst, true)
			return nil
		})
		nae.Nested(ctaTupleProto, func(p *netlink.AttributeEncoder) error {
			p.Uint8(ctaProtoNum, proto)
			switch {
			case hasPorts(proto):
				p.Uint16(ctaProtoSrcPort, t.SrcPort)
				p.Uint16(ctaProtoDstPort, t.DstPort)
			case isICMP(proto):
				off := uint16(0)
				if proto == 58 {
					off = 3
				}
				p.Uint16(ctaProtoICMPID+off, icmp.ID)
				p.Uint8(ctaProtoICMPTyp+off, icmp.Type)
				p.Uint8(ctaProtoICMPCod+off, icmp.Code)
			}
			return nil
		})
		return nil
	})
}

// putAddr encodes a as CTA_IP_V4_SRC/DST or CTA_IP_V6_SRC/DST; an invalid
// address is left out.
func putAddr(ae *netlink.AttributeEncoder, a netip.Addr, dst bool) {
	typ := uint16(ctaIPv4Src)
	if a.Is6() {
		typ = ctaIPv6Src
	} else if !a.Is4() {
		return
	}
	if dst {
		typ++
	}
	ae.Bytes(typ, a.AsSlice())
}

// describe names an entry in errors.
func describe(e Entry) string {
	return fmt.Sprintf("%s %s:%d->%s:%d", e.Protocol, e.Orig.Src, e.Orig.SrcPort, e.Orig.Dst, e.Orig.DstPort)
}
