package main

import (
	"os"
	"runtime/debug"
)

// oneServiceHeapLimit bounds the heap of a question about one Service
// (see collectGarbageLate).
const oneServiceHeapLimit = 512 << 20

// collectGarbageLate leaves the garbage of a short command to the end of
// the process, unless the heap grows to limit: explain reads one Service
// of a snapshot, allocates little that it keeps, and exits, and collecting
// garbage it will never reuse cost a fifth of its time on a 10,000-Service
// node. A collector tuned by the user (GOGC, GOMEMLIMIT) is left alone.
func collectGarbageLate(limit int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(-1)
}
