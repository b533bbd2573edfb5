package ipvs

import (
	"context"
	"errors"
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

var _ dataplane.KernelFingerprinter = Loader{}

// KernelFingerprint tells an IPVS table that is not there (the module not
// loaded) or empty, as on a node whose kube-proxy runs in another mode.
// Of a table with virtual servers, it is a digest of what the plane reads
// but what traffic moves: the virtual and real servers' configuration
// without their connection counts and statistics (fingerprint_ipvs.go),
// every ipset's header and members (fingerprint_ipset.go), and the
// addresses on kube-ipvs0; all read over netlink, as the table is, in a
// dump of the virtual servers, one of each one's real servers, one of the
// ipsets and one of the addresses. It costs about what the netlink reads
// cost, and spares the parse and the walk of every Service.
func (Loader) KernelFingerprint(ctx context.Context) ([]byte, error) {
	return kernelFingerprint(ctx, ipvsnetlink.Kernel{})
}

// kernelFingerprint takes the digest over netlink sockets of d.
func kernelFingerprint(ctx context.Context, d ipvsnetlink.Dialer) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := ipvsnetlink.OpenIPVS(d)
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	if c == nil {
		return []byte("IPVS: not loaded"), nil
	}
	defer c.Close()
	msgs, err := c.Services()
	if err != nil {
		return nil, fmt.Errorf("ipvs: listing IPVS services: %w", err)
	}
	if len(msgs) == 0 {
		return []byte("IPVS: empty"), nil
	}
	dg := newDigester()
	virtuals, err := virtualRecords(c, msgs)
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	dg.part("IPVS", virtuals)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Only now, on a node in ipvs mode, whose kube-proxy has loaded
	// ip_set: asking a kernel without it would load it.
	sets, err := ipsetRecords(d)
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	dg.part("ipsets", sets)
	addrs, err := dummyRecords(d)
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	dg.part(Dummy, addrs)
	return dg.sum("IPVS: "), nil
}

// dummyRecords are the addresses on kube-ipvs0 (none where it is not).
func dummyRecords(d ipvsnetlink.Dialer) ([][]byte, error) {
	l, err := ipvsnetlink.Addrs(d, Dummy)
	if errors.Is(err, ipvsnetlink.ErrNoLink) {
		return [][]byte{[]byte("no " + Dummy)}, nil
	}
	if err != nil {
		return nil, err
	}
	recs := make([][]byte, 0, len(l.Addrs))
	for _, m := range l.Addrs {
		p, err := ifaPrefix(m)
		if err != nil {
			return nil, fmt.Errorf("an address of %s: %w", Dummy, err)
		}
		b, _ := p.MarshalBinary()
		recs = append(recs, b)
	}
	return recs, nil
}
