package ipvs

import (
	"fmt"

	"github.com/mdlayher/genetlink"

	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// The IPVS table's part of the digest: a record per virtual server, its
// attributes as the kernel sends them (address family, protocol, address,
// port, firewall mark, scheduler, flags, timeout, netmask, persistence
// engine, and any a later kernel adds) but its statistics, then its real
// servers' records (address, port, forwarding method, weight, upper and
// lower thresholds, address family, tunnel type, port and flags), without
// their connection counts and statistics.
//
// The records are sorted, at both levels: the kernel dumps virtual
// servers in the order of its hash table's buckets (the hash mixes in
// the namespace's address, and a virtual server deleted and made again
// moves within its bucket), and real servers in the order they were
// added. Neither order is in what a read finds (the listing sorts both,
// as ipvsadm does) nor in the plane's walk, so a digest that depended on
// it would only change where the read finds the same table.

// IPVS statistics and counters, by attribute (include/uapi/linux/ip_vs.h).
const (
	svcStats, svcStats64 = 10, 12

	dstPersistent, dstStats, dstStats64 = 9, 10, 12
)

// serviceCounter says whether a virtual server's attribute moves with
// traffic.
func serviceCounter(typ uint16) bool { return typ == svcStats || typ == svcStats64 }

// destCounter says whether a real server's attribute moves with traffic.
func destCounter(typ uint16) bool {
	switch typ {
	case dstActive, dstInactive, dstPersistent, dstStats, dstStats64:
		return true
	}
	return false
}

// serviceRecord is a virtual server's configuration (svc: the content
// of its AttrService), and the attributes that name it in a request for
// its real servers.
func serviceRecord(svc []byte) (rec, id []byte, err error) {
	err = eachAttr(svc, func(typ uint16, payload, raw []byte) error {
		switch typ {
		case svcAF, svcProtocol, svcAddr, svcPort, svcFWMark:
			// Each attribute of a request starts 4-byte aligned.
			id = append(id, raw...)
			id = append(id, make([]byte, (len(raw)+3)&^3-len(raw))...)
		}
		if !serviceCounter(typ) {
			rec = appendRecord(rec, raw)
		}
		return nil
	})
	return rec, id, err
}

// virtualRecords are the records of the virtual servers msgs (a dump of
// them) holds, each with its real servers', which it dumps over c.
func virtualRecords(c *ipvsnetlink.IPVS, msgs []genetlink.Message) ([][]byte, error) {
	recs := make([][]byte, 0, len(msgs))
	var reals [][]byte
	for _, m := range msgs {
		svc, err := nested(m.Data, ipvsnetlink.AttrService)
		if err != nil {
			return nil, fmt.Errorf("an IPVS service: %w", err)
		}
		rec, id, err := serviceRecord(svc)
		if err != nil {
			return nil, fmt.Errorf("an IPVS service: %w", err)
		}
		dms, err := c.Dests(id)
		if err != nil {
			return nil, fmt.Errorf("listing the real servers of an IPVS service: %w", err)
		}
		if reals, err = realRecords(reals[:0], dms); err != nil {
			return nil, err
		}
		recs = append(recs, sortedRecords(rec, reals))
	}
	return recs, nil
}

// realRecords appends to dst the configuration of each real server of a
// dump of them.
func realRecords(dst [][]byte, dms []genetlink.Message) ([][]byte, error) {
	for _, dm := range dms {
		dst0, err := nested(dm.Data, ipvsnetlink.AttrDest)
		if err != nil {
			return nil, fmt.Errorf("an IPVS real server: %w", err)
		}
		r, err := withoutAttrs(nil, dst0, destCounter)
		if err != nil {
			return nil, fmt.Errorf("an IPVS real server: %w", err)
		}
		dst = append(dst, r)
	}
	return dst, nil
}
