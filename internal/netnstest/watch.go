//go:build linux

package netnstest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/netns"
)

// Watch runs a plane's kernel watch (dataplane.KernelWatcher's
// WatchKernel) in the namespace ns until the test ends, and returns the
// channel it signals each change on (one signal waits at most). When the
// test ends, the watch must end with its context, without an error.
func Watch(t testing.TB, ns string, watch func(ctx context.Context, changed func()) error) <-chan struct{} {
	t.Helper()
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- netns.Run(filepath.Join("/run/netns", ns), func() error {
			return watch(ctx, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the watch ended with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("the watch did not end with its context")
		}
	})
	return changed
}
