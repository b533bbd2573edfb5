//go:build linux

package analysis_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// BenchmarkReadAnalyzeChanged10k is the node agent's check after a rule of
// one Service changed in the kernel, on the legacy backend at 10,000
// Services × 10 endpoints: read both families' tables, and check every
// Service with the memo of the last check (analysis.Memo), which walks
// again only the Service whose chain changed. Each iteration first deletes
// that Service's last endpoint jump, or puts it back (untimed), so that
// every check timed follows one change. The baselines, measured in the
// same run, are the same check without the memo (x-full, the faster of
// two; cpu-x-full its CPU time, user and system, over the full check's,
// as the checks of an agent on a busy node cost) and iptables-legacy-save
// (x-save). unchanged-cpu-x-full is, over the same baseline, the CPU time
// of one check where nothing changed (the agent's full read every
// --full-interval on an idle node).
func BenchmarkReadAnalyzeChanged10k(b *testing.B) {
	const services = 10000
	ns := netnstest.New(b, "bench", "iptables-legacy-restore", "iptables-legacy-save", "iptables-legacy")
	netnstest.Nfacct(b, ns, "ct_state_invalid_dropped_pkts")
	text := snapshottest.IPTablesSave(services, 10)
	netnstest.Run(b, ns, text, "iptables-legacy-restore")
	var jump string
	for l := range strings.Lines(text) {
		if strings.Contains(l, "/svc-5000:http -> ") && strings.Contains(l, "-j KUBE-SEP-") {
			jump = strings.TrimSuffix(l, "\n")
		}
	}
	if jump == "" {
		b.Fatal("no endpoint jump of svc-5000 in the dump")
	}
	start := time.Now()
	netnstest.Run(b, ns, "", "iptables-legacy-save")
	save := time.Since(start)
	base := snapshottest.Node(services, 10)
	base.Nodes[0].Dumps = nil // read from the kernel instead
	check := newChecker(b, ns, base)
	full, fullCPU := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 2 {
		start, cpu := time.Now(), cpuTime(b)
		check(nil)
		full, fullCPU = min(full, time.Since(start)), min(fullCPU, cpuTime(b)-cpu)
	}
	memo := analysis.NewMemo()
	check(memo)
	// A check where nothing changed: the agent's full read every
	// --full-interval, on an idle node.
	was := cpuTime(b)
	check(memo)
	unchanged := cpuTime(b) - was
	if reused, walked := memo.Counts("node1", "IPv4"); walked != 0 || reused == 0 {
		b.Fatalf("nothing changed: %d groups walked, %d reused", walked, reused)
	}
	deleted := false
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		edit := "-D"
		if deleted {
			edit = "-A"
		}
		netnstest.Run(b, ns, "", "sh", "-c", "iptables-legacy -t nat "+edit+strings.TrimPrefix(jump, "-A"))
		deleted = !deleted
		b.StartTimer()
		was := cpuTime(b)
		r := check(memo)
		cpu += cpuTime(b) - was
		b.StopTimer()
		// The jump deleted: its endpoint gets nothing, and a tenth of the
		// traffic is black-holed; put back, nothing.
		if deleted != (len(r.Findings) == 2) || (!deleted && len(r.Findings) > 0) {
			b.Fatalf("jump deleted: %v; %d findings: %+v", deleted, len(r.Findings), r.Findings)
		}
		if _, walked := memo.Counts("node1", "IPv4"); walked > 2 {
			b.Fatalf("%d groups walked again after one Service's change", walked)
		}
		b.StartTimer()
	}
	b.StopTimer()
	per := float64(b.Elapsed()) / float64(b.N)
	b.ReportMetric(per/float64(save), "x-save")
	b.ReportMetric(per/float64(full), "x-full")
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(fullCPU), "cpu-x-full")
	b.ReportMetric(float64(unchanged)/float64(fullCPU), "unchanged-cpu-x-full")
}

// cpuTime is the CPU time the process used so far (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
