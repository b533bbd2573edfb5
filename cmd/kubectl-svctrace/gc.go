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
	if userTunedGC() {
		return
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(-1)
}

// wholeNodeGCPercent is the collector's target (GOGC) for a command that
// analyses whole nodes.
const wholeNodeGCPercent = 150

// collectGarbageLess lets the heap of a command that analyses whole nodes
// grow to two and a half times what it keeps before it is collected, not
// twice: most of what drift allocates (parsed rules, behaviour tables)
// lives until it prints, so the default collector ran often and freed
// little. On a 10,000-Service iptables snapshot, drift takes a fifth less
// time for a few percent more peak memory (200 cut no more time and cost
// twice the memory). A collector tuned by the user is left alone.
func collectGarbageLess() {
	if userTunedGC() {
		return
	}
	debug.SetGCPercent(wholeNodeGCPercent)
}

// userTunedGC: the user set the collector's target or limit.
func userTunedGC() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}
