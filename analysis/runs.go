package analysis

import (
	"runtime"
	"slices"
	"sync"
)

// inRuns is what add appends for each index of [0, n), worked out in runs
// of indexes, one per CPU when there are at least minRun to a run, and
// joined in the indexes' order: the same as one loop, on a large node's
// thousands of independent ports or frontends.
func inRuns[R any](n, minRun int, add func(out []R, i int) []R) []R {
	runs := make([][]R, min(runtime.GOMAXPROCS(0), max(1, n/minRun)))
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			for i := r * n / len(runs); i < (r+1)*n/len(runs); i++ {
				runs[r] = add(runs[r], i)
			}
		})
	}
	wg.Wait()
	return slices.Concat(runs...)
}
