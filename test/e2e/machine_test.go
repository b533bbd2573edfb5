//go:build linux

package e2e

import (
	"fmt"
	"os"
	"strings"
)

// cpuAndMemory describes the machine's CPU model and memory, as the
// benchmarks' reports name them ("AMD EPYC", "23.5 GiB memory").
func cpuAndMemory() (model, mem string) {
	model, mem = "unknown CPU", "unknown memory"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kib int64
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kib); err == nil {
					mem = fmt.Sprintf("%.1f GiB memory", float64(kib)/(1<<20))
				}
			}
		}
	}
	return model, mem
}
