package nftables

import (
	"fmt"
	"unsafe"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

var _ dataplane.KernelReader = Loader{}

// ReadKernel reads the nftables ruleset over netlink (ReadNetlink) for
// `nft -j list ruleset`: the kernel dumps it in half the time nft takes,
// and the ruleset read need not be parsed again. Text is the JSON nft
// would print (RenderJSON), for a snapshot.
func (Loader) ReadKernel(collector, _ string) (snapshot.Dump, error) {
	if collector != snapshot.CollectorNFTJSON {
		return snapshot.Dump{}, fmt.Errorf("nftables: no netlink read stands for %s", collector)
	}
	failed := snapshot.Dump{Collector: collector}
	rs, err := ReadNetlink(0)
	if err != nil {
		return failed, err
	}
	text, err := RenderJSON(rs)
	if err != nil {
		return failed, err
	}
	return snapshot.Dump{Collector: collector, Origin: KernelSource,
		Text: unsafe.String(unsafe.SliceData(text), len(text)), Parsed: rs}, nil
}
