package inspect

import (
	"context"
	"sync"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins"
)

// WatchKernel calls changed soon after each change of the kernel state
// the planes read, through every plane that can tell
// (dataplane.KernelWatcher), until ctx ends. Each plane watches on a
// goroutine of its own, so in the process's network namespace (the
// agent's threads are all in its node's), not a namespace one thread
// joined.
// failed hears each plane that cannot watch, with why (its changes are
// then seen only by reading). It returns once every watch has stopped.
func WatchKernel(ctx context.Context, changed func(), failed func(mode string, err error)) {
	var wg sync.WaitGroup
	for _, l := range plugins.Loaders() {
		w, ok := l.(dataplane.KernelWatcher)
		if !ok {
			continue
		}
		wg.Go(func() {
			if err := w.WatchKernel(ctx, changed); err != nil && ctx.Err() == nil {
				failed(l.Mode(), err)
			}
		})
	}
	wg.Wait()
}
