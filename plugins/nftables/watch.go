package nftables

import (
	"context"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

var _ dataplane.KernelWatcher = Loader{}

// WatchKernel calls changed soon after each change of the calling
// thread's network namespace's nf_tables rulesets: kube-proxy's in
// nftables mode, iptables-nft's rules (iptables mode on the nf_tables
// backend, and ipvs mode's rules there), and other components'. The
// kernel notifies every change, so nothing is polled.
func (Loader) WatchKernel(ctx context.Context, changed func()) error {
	return nfnetlink.Watch(ctx, 0, changed)
}
