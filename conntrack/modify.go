//go:build linux

package conntrack

import (
	"context"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/ti-mo/netfilter"
	"golang.org/x/sys/unix"
)

// createBatch is the number of entries Create sends in one datagram.
const createBatch = 256

// Create adds e to the conntrack table of the calling thread's network
// namespace (IPCTNL_MSG_CT_NEW with NLM_F_CREATE|NLM_F_EXCL), for tests:
// no traffic is needed, and Reply may differ from the inverted Orig (a
// DNATed entry). A zero Reply means the inverse of Orig. Timeout must not
// be 0; Unreplied and Assured set the status; State (tcp, sctp) sets the
// protocol state. An entry that exists already gives an error that
// errors.Is unix.EEXIST.
func Create(ctx context.Context, e Entry) error {
	return kernelTable().create(ctx, []Entry{e})
}

// create creates entries in batches, many requests per datagram and one
// acknowledgement per batch (errors are reported per request).
func (tb table) create(ctx context.Context, entries []Entry) error {
	c, err := tb.conn()
	if err != nil {
		return fmt.Errorf("conntrack create: %w", err)
	}
	defer c.Close()
	var buf []byte
	for start := 0; start < len(entries); start += createBatch {
		var err error
		buf, err = createBatchOn(ctx, c, buf[:0], entries[start:min(start+createBatch, len(entries))])
		if err != nil {
			return err
		}
	}
	return nil
}

// createBatchOn sends one datagram of create requests, built in buf, and
// reads their acknowledgements; it returns buf for the next batch.
func createBatchOn(ctx context.Context, c *ctnetlink.Conn, buf []byte, chunk []Entry) ([]byte, error) {
	var first, last uint32
	for i, e := range chunk {
		attrs, fam, err := createAttrs(e)
		if err != nil {
			return buf, fmt.Errorf("conntrack create %s: %w", describe(e), err)
		}
		flags := uint16(unix.NLM_F_CREATE | unix.NLM_F_EXCL)
		if i == len(chunk)-1 {
			flags |= unix.NLM_F_ACK
		}
		buf, last = c.AppendRequest(buf, ctnetlink.MsgNew, flags, fam, attrs)
		if i == 0 {
			first = last
		}
	}
	if err := c.Send(ctx, buf); err != nil {
		return buf, fmt.Errorf("conntrack create: %w", err)
	}
	var errs []error
	err := c.Receive(ctx, func(m ctnetlink.Message) (bool, error) {
		if m.Type != unix.NLMSG_ERROR || m.Seq < first || m.Seq > last {
			return false, nil
		}
		if err := m.Status(); err != nil {
			errs = append(errs, fmt.Errorf("conntrack create %s: %w", describe(chunk[m.Seq-first]), err))
		}
		return m.Seq == last, nil
	})
	if err != nil {
		return buf, fmt.Errorf("conntrack create: %w", err)
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return buf, errors.Join(errs...)
}

// Delete removes the entry with e's original tuple and zone from the
// calling thread's network namespace. If e.ID is not 0 the kernel deletes
// only an entry with that id, so a newer flow that reuses the tuple is
// left alone. deleted is false, with a nil error, when no such entry
// exists (ENOENT: already gone).
func Delete(ctx context.Context, e Entry) (deleted bool, err error) {
	return kernelTable().delete(ctx, e)
}

// delete is Delete on tb.
func (tb table) delete(ctx context.Context, e Entry) (bool, error) {
	fam, err := entryFamily(e)
	if err != nil {
		return false, fmt.Errorf("conntrack delete %s: %w", describe(e), err)
	}
	proto, ok := protoNumber(e.Protocol)
	if !ok {
		return false, fmt.Errorf("conntrack delete %s: unknown protocol %q", describe(e), e.Protocol)
	}
	ae := netfilter.NewAttributeEncoder()
	putTuple(ae, ctaTupleOrig, e.Orig, proto, e.ICMP)
	if e.Zone != 0 {
		ae.Uint16(ctaZone, e.Zone)
	}
	if e.ID != 0 {
		ae.Uint32(ctaID, e.ID)
	}
	attrs, err := ae.Encode()
	if err != nil {
		return false, fmt.Errorf("conntrack delete %s: %w", describe(e), err)
	}
	c, err := tb.conn()
	if err != nil {
		return false, fmt.Errorf("conntrack delete: %w", err)
	}
	defer c.Close()
	err = c.Ack(ctx, ctnetlink.MsgDelete, fam, attrs, nil)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("conntrack delete %s: %w", describe(e), err)
	}
	return true, nil
}

// Count returns the number of entries in the conntrack table of the
// calling thread's network namespace (IPCTNL_MSG_CT_GET_STATS).
func Count(ctx context.Context) (int, error) {
	return kernelTable().count(ctx)
}

// count is Count on tb.
func (tb table) count(ctx context.Context) (int, error) {
	c, err := tb.conn()
	if err != nil {
		return 0, fmt.Errorf("conntrack count: %w", err)
	}
	defer c.Close()
	n := -1
	err = c.Ack(ctx, ctnetlink.MsgGetStats, unix.AF_UNSPEC, nil, func(m ctnetlink.Message) error {
		ad, err := netfilter.NewAttributeDecoder(m.Payload[min(4, len(m.Payload)):])
		if err != nil {
			return err
		}
		for ad.Next() {
			if ad.Type() == ctaStatsEntries {
				n = int(ad.Uint32())
			}
		}
		return ad.Err()
	})
	if err == nil && n < 0 {
		err = errors.New("kernel sent no entry count")
	}
	if err != nil {
		return 0, fmt.Errorf("conntrack count: %w", err)
	}
	return n, nil
}

// createAttrs encodes e as an IPCTNL_MSG_CT_NEW request.
func createAttrs(e Entry) ([]byte, uint8, error) {
	fam, err := entryFamily(e)
	if err != nil {
		return nil, 0, err
	}
	proto, ok := protoNumber(e.Protocol)
	if !ok {
		return nil, 0, fmt.Errorf("unknown protocol %q", e.Protocol)
	}
	if e.Timeout == 0 {
		return nil, 0, errors.New("timeout must not be 0")
	}
	reply := e.Reply
	if reply == (Tuple{}) {
		reply = Tuple{Src: e.Orig.Dst, Dst: e.Orig.Src, SrcPort: e.Orig.DstPort, DstPort: e.Orig.SrcPort}
	}
	if familyOf(reply.Src) != familyOf(e.Orig.Src) || familyOf(reply.Dst) != familyOf(e.Orig.Src) {
		return nil, 0, errors.New("reply tuple of another family")
	}
	ae := netfilter.NewAttributeEncoder()
	putTuple(ae, ctaTupleOrig, e.Orig, proto, e.ICMP)
	replyICMP := e.ICMP
	replyICMP.Type = icmpReplyType(e.ICMP.Type, proto == 58)
	putTuple(ae, ctaTupleReply, reply, proto, replyICMP)
	ae.Uint32(ctaTimeout, e.Timeout)
	// The kernel marks a created entry confirmed before it applies
	// CTA_STATUS and refuses to clear that bit.
	status := uint32(statusConfirmed)
	if !e.Unreplied {
		status |= statusSeenReply
	}
	if e.Assured {
		status |= statusAssured
	}
	ae.Uint32(ctaStatus, status)
	if e.Mark != 0 {
		ae.Uint32(ctaMark, e.Mark)
	}
	if e.Zone != 0 {
		ae.Uint16(ctaZone, e.Zone)
	}
	if e.State != "" {
		st, ok := stateNumber(proto, e.State)
		if !ok || proto != 6 && proto != 132 {
			return nil, 0, fmt.Errorf("cannot create %s state %q", e.Protocol, e.State)
		}
		ae.Nested(ctaProtoinfo, func(pi *netlink.AttributeEncoder) error {
			if proto == 6 { // CTA_PROTOINFO_TCP { CTA_PROTOINFO_TCP_STATE }
				pi.Nested(1, func(t *netlink.AttributeEncoder) error { t.Uint8(1, st); return nil })
				return nil
			}
			// CTA_PROTOINFO_SCTP { STATE, VTAG_ORIGINAL, VTAG_REPLY }: all required.
			pi.Nested(3, func(t *netlink.AttributeEncoder) error {
				t.Uint8(1, st)
				t.Uint32(2, 0)
				t.Uint32(3, 0)
				return nil
			})
			return nil
		})
	}
	b, err := ae.Encode()
	return b, fam, err
}

// entryFamily returns the netfilter family of e's original tuple.
func entryFamily(e Entry) (uint8, error) {
	fam := familyOf(e.Orig.Src)
	switch {
	case fam == "" || familyOf(e.Orig.Dst) != fam:
		return 0, errors.New("original tuple needs two addresses of one family")
	case e.Family != "" && e.Family != fam:
		return 0, fmt.Errorf("family %s with %s addresses", e.Family, fam)
	case fam == IPv4:
		return unix.AF_INET, nil
	}
	return unix.AF_INET6, nil
}
