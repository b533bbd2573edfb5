//go:build linux

package conntrack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	ct "github.com/ti-mo/conntrack"
)

// Dump streams the conntrack table of the network namespace the calling
// thread is in (lock the OS thread and setns, or use internal/netns.Run, to read
// another one), calling fn for each entry that passes f as netlink
// messages arrive; the table is never held in memory. What the kernel can
// filter (see kernelFilter) is filtered there; f is always applied again
// here, so the result is the same on kernels that filter less. An error
// from fn stops the dump and is returned.
func Dump(ctx context.Context, f Filter, fn func(Entry) error) (DumpStats, error) {
	return kernelTable().dump(ctx, f, fn)
}

// dump is Dump on tb.
func (tb table) dump(ctx context.Context, f Filter, fn func(Entry) error) (DumpStats, error) {
	if fn == nil {
		return DumpStats{}, errors.New("conntrack dump: nil callback")
	}
	m, err := compileFilter(f)
	if err != nil {
		return DumpStats{}, fmt.Errorf("conntrack dump: %w", err)
	}
	attrs, err := m.kernelFilter()
	if err != nil {
		return DumpStats{}, fmt.Errorf("conntrack dump: kernel filter: %w", err)
	}
	c, err := tb.conn()
	if err != nil {
		return DumpStats{}, fmt.Errorf("conntrack dump: %w", err)
	}
	defer c.Close()
	st, err := dumpConn(ctx, c, m, attrs, fn)
	if err != nil && st.Seen == 0 && attrs != nil && ctnetlink.IsKernelError(err) {
		// An older kernel refused the filter: filter only here.
		st, err = dumpConn(ctx, c, m, nil, fn)
	}
	if err != nil {
		return st, fmt.Errorf("conntrack dump: %w", err)
	}
	return st, nil
}

// dumpConn runs one IPCTNL_MSG_CT_GET dump on c with the given filter
// attributes.
func dumpConn(ctx context.Context, c *ctnetlink.Conn, m *matcher, attrs []byte, fn func(Entry) error) (DumpStats, error) {
	st := DumpStats{KernelFilter: attrs != nil || m.nfFamily != 0}
	err := c.Dump(ctx, ctnetlink.MsgGet, m.nfFamily, attrs, func(msg ctnetlink.Message) error {
		st.Seen++
		e, err := decodeEntry(msg)
		if err != nil {
			return fmt.Errorf("entry %d: %w", st.Seen, err)
		}
		if !m.match(&e) {
			return nil
		}
		st.Passed++
		return fn(e)
	})
	return st, err
}

// ctnetlink attribute types used here (linux/netfilter/nfnetlink_conntrack.h).
const (
	ctaTupleOrig     = 1
	ctaTupleReply    = 2
	ctaStatus        = 3
	ctaProtoinfo     = 4
	ctaTimeout       = 7
	ctaMark          = 8
	ctaCountersOrig  = 9
	ctaCountersReply = 10
	ctaID            = 12
	ctaZone          = 18
	ctaFilter        = 25
)

// decodeEntry turns one dump message into an Entry, decoding it with
// ti-mo/conntrack.
func decodeEntry(msg ctnetlink.Message) (Entry, error) {
	var ev ct.Event
	nm := netlink.Message{
		Header: netlink.Header{Length: msg.Len, Type: netlink.HeaderType(msg.Type),
			Flags: netlink.HeaderFlags(msg.Flags), Sequence: msg.Seq, PID: msg.Pid},
		Data: msg.Payload,
	}
	if err := ev.Unmarshal(nm); err != nil {
		return Entry{}, err
	}
	if ev.Flow == nil {
		return Entry{}, fmt.Errorf("message type %#x is not a conntrack entry", msg.Type)
	}
	fl := ev.Flow
	o, r := fl.TupleOrig, fl.TupleReply
	p := o.Proto.Protocol
	e := Entry{
		Family:   familyOf(o.IP.SourceAddress),
		Protocol: protoName(p),
		Orig: Tuple{Src: o.IP.SourceAddress, Dst: o.IP.DestinationAddress,
			SrcPort: o.Proto.SourcePort, DstPort: o.Proto.DestinationPort},
		Reply: Tuple{Src: r.IP.SourceAddress, Dst: r.IP.DestinationAddress,
			SrcPort: r.Proto.SourcePort, DstPort: r.Proto.DestinationPort},
		Timeout:   fl.Timeout,
		Assured:   fl.Status&ct.StatusAssured != 0,
		Unreplied: fl.Status&ct.StatusSeenReply == 0,
		Mark:      fl.Mark,
		Zone:      fl.Zone,
		ID:        fl.ID,
	}
	switch pi := fl.ProtoInfo; {
	case pi.TCP != nil:
		e.State = stateName(p, pi.TCP.State)
	case pi.SCTP != nil:
		e.State = stateName(p, pi.SCTP.State)
	case pi.DCCP != nil:
		e.State = stateName(p, pi.DCCP.State)
	}
	if isICMP(p) {
		e.ICMP = ICMP{Type: o.Proto.ICMPType, Code: o.Proto.ICMPCode, ID: o.Proto.ICMPID}
	}
	if !hasPorts(p) { // gre keys come as ports; text has none
		e.Orig.SrcPort, e.Orig.DstPort, e.Reply.SrcPort, e.Reply.DstPort = 0, 0, 0, 0
	}
	// ti-mo/conntrack cannot tell zero counters from none: look for them.
	if hasAttr(msg.Payload[min(4, len(msg.Payload)):], ctaCountersOrig) {
		e.Accounting = true
		e.OrigPackets, e.OrigBytes = fl.CountersOrig.Packets, fl.CountersOrig.Bytes
		e.ReplyPackets, e.ReplyBytes = fl.CountersReply.Packets, fl.CountersReply.Bytes
	}
	return e, nil
}

// hasAttr reports whether the top-level attributes in b include typ.
func hasAttr(b []byte, typ uint16) bool {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		if l < 4 || l > len(b) {
			return false
		}
		if binary.NativeEndian.Uint16(b[2:])&0x3fff == typ {
			return true
		}
		b = b[min(len(b), (l+3)&^3):]
	}
	return false
}
