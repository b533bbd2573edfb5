package ipvs

import (
	"context"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

var _ dataplane.KernelWatcher = Loader{}

// WatchKernel calls changed soon after each change of the addresses on
// kube-ipvs0 (or when it comes or goes), which rtnetlink notifies. The
// IPVS table and the ipsets tell of no change and have no count cheap
// enough to poll: a change there is seen at the next periodic read. The
// iptables rules of ipvs mode are the iptables plane's to watch.
func (Loader) WatchKernel(ctx context.Context, changed func()) error {
	return ipvsnetlink.WatchLink(ctx, Dummy, changed)
}
