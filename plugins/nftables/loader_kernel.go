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
	return readKernel(collector, nil)
}

var _ dataplane.RepeatedReader = Loader{}

// Repeated is a reader for the node agent, which reads its namespace's
// ruleset again and again: it keeps the elements of the sets that cannot
// change (ElementCache) from one of its reads to the next.
func (Loader) Repeated() dataplane.KernelReader {
	return cachedReader{cache: NewElementCache()}
}

// cachedReader is a Loader whose reads share a cache.
type cachedReader struct {
	Loader
	cache *ElementCache
}

func (r cachedReader) ReadKernel(collector, _ string) (snapshot.Dump, error) {
	return readKernel(collector, r.cache)
}

func readKernel(collector string, cache *ElementCache) (snapshot.Dump, error) {
	if collector != CollectorJSON {
		return snapshot.Dump{}, fmt.Errorf("nftables: no netlink read stands for %s", collector)
	}
	failed := snapshot.Dump{Collector: collector}
	rs, err := ReadNetlinkCached(0, cache)
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
