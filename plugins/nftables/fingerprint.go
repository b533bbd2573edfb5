package nftables

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

var _ dataplane.KernelFingerprinter = Loader{}

// KernelFingerprint is the nf_tables generation of the calling thread's
// network namespace, which every committed change of any ruleset moves:
// nftables mode's, and iptables-nft's rules (iptables mode, and ipvs mode's
// rules, on the nf_tables backend).
func (Loader) KernelFingerprint(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := nfnetlink.Dial(nfnetlink.NetNS(0))
	if err != nil {
		return nil, fmt.Errorf("nftables: the ruleset's generation: %w", err)
	}
	defer c.Close()
	gen, err := c.Generation()
	if err != nil {
		return nil, fmt.Errorf("nftables: the ruleset's generation: %w", err)
	}
	return binary.BigEndian.AppendUint32([]byte("nf_tables generation "), gen), nil
}
