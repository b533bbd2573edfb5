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
// A table with virtual servers has no digest cheaper than reading it, nor
// do the ipsets: that is an error, and the node is read in full.
func (Loader) KernelFingerprint(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := ipvsnetlink.OpenIPVS(ipvsnetlink.Kernel{})
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
	if len(msgs) > 0 {
		return nil, errors.New("ipvs: an IPVS table with virtual servers has no digest cheaper than reading it")
	}
	return []byte("IPVS: empty"), nil
}
