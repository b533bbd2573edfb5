package inspect

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForEachNode reads every node once, never more than Concurrency at a
// time, each under its own deadline, and tells the progress.
func TestForEachNode(t *testing.T) {
	nodes := []string{"a", "b", "c", "d", "e", "f", "g"}
	var running, most atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	var last int
	ForEachNode(context.Background(), nodes, FanOut{Concurrency: 3, Timeout: 50 * time.Millisecond,
		Progress: func(done, total int) {
			mu.Lock()
			last = max(last, done)
			mu.Unlock()
		}},
		func(ctx context.Context, i int, node string) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			if node == "c" {
				<-ctx.Done() // a node that never answers
			} else {
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			seen[nodes[i]]++
			mu.Unlock()
			running.Add(-1)
		})
	if len(seen) != len(nodes) || most.Load() > 3 || last != len(nodes) {
		t.Errorf("seen %v, at most %d at once, progress %d", seen, most.Load(), last)
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s read %d times", n, c)
		}
	}
}
