//go:build linux

package analysis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// BenchmarkDriftChangedNFT10k is a drift check of an nftables node of
// 10,000 Services × 10 endpoints with the memo of the last check
// (analysis.Memo), each check after one Service's rule that picks its
// endpoints changed (alternately changed and put back). The dumps are
// JSON, parsed by each check, which the agent, reading the ruleset over
// netlink, does not do. The baseline, measured in the same run, is the
// same check without the memo (x-full, the faster of two; cpu-x-full the
// CPU time, user and system, over the full check's).
func BenchmarkDriftChangedNFT10k(b *testing.B) {
	const services = 10000
	states := [2]*snapshot.Snapshot{snapshottest.NodeNFTables(services, 10), snapshottest.NodeNFTables(services, 10)}
	var pick string
	for obj := range strings.SplitSeq(states[1].Nodes[0].Dumps[0].Text, `, {"rule": `) {
		if strings.Contains(obj, `/svc-5000/tcp/http", "handle"`) && strings.Contains(obj, `"mod": 10`) {
			pick = obj
		}
	}
	if pick == "" {
		b.Fatal("no rule picking svc-5000's endpoints in the dump")
	}
	editDumps(states[1], func(text string) string {
		return strings.Replace(text, pick, strings.Replace(pick, `"mod": 10`, `"mod": 11`, 1), 1)
	})
	check := func(s *snapshot.Snapshot, memo *analysis.Memo) *analysis.DriftReport {
		r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Memo: memo})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	full, fullCPU := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 2 {
		start, cpu := time.Now(), cpuTime(b)
		check(states[0], nil)
		full, fullCPU = min(full, time.Since(start)), min(fullCPU, cpuTime(b)-cpu)
	}
	memo := analysis.NewMemo()
	check(states[0], memo)
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		was := cpuTime(b)
		r := check(states[(i+1)%2], memo)
		cpu += cpuTime(b) - was
		b.StopTimer()
		if changed := (i+1)%2 == 1; changed != (len(r.Findings) > 0) {
			b.Fatalf("svc-5000's rule changed: %v; findings %+v", changed, r.Findings)
		}
		if _, walked := memo.Counts("node1", "IPv4"); walked > 2 {
			b.Fatalf("%d groups walked again after one Service's change", walked)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(full), "x-full")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(fullCPU), "cpu-x-full")
}
