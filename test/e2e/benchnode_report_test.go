package e2e

import (
	"strings"
	"testing"
	"time"
)

func benchTestRun(mode string, services int, scale float64) benchRun {
	d := func(s float64) time.Duration { return time.Duration(s * scale * float64(time.Second)) }
	return benchRun{
		Mode: mode, Backend: map[string]string{"iptables": "legacy"}[mode], ProxyVersion: "v1.36.3",
		Services: services, Endpoints: 10, DumpCommand: "iptables-legacy-save", FullSyncs: 2, SnapshotFile: "node1.snapshot",
		Results: map[string]benchResult{
			stepDump:          {Wall: d(1), MaxRSSKiB: int64(100 * 1024 * scale)},
			stepFullSync:      {Wall: d(12)},
			stepList:          {Wall: d(2)},
			stepDrift:         {Wall: d(4), MaxRSSKiB: int64(300 * 1024 * scale)},
			stepAnalysis:      {Wall: d(1.4), MaxRSSKiB: int64(250 * 1024 * scale)},
			stepAnalysisFirst: {Wall: d(2), MaxRSSKiB: int64(250 * 1024 * scale)},
			stepCollect:       {Wall: d(3), MaxRSSKiB: 512 * 1024},
			stepDriftSnapshot: {Wall: d(2.5)},
			stepExplain:       {Wall: 80 * time.Millisecond},
		},
		Bytes: map[string]int64{"dump": 48 << 20, "objects": 3 << 20, "snapshot": 700 << 10},
	}
}

func TestFormatBenchReport(t *testing.T) {
	small := benchTestRun("iptables", 1000, 1)
	large := benchTestRun("iptables", 10000, 12) // drift and analysis grow 12×: growth not met
	large.Results[stepExplain] = benchResult{Wall: 150 * time.Millisecond, MaxRSSKiB: 40 * 1024}
	delete(large.Results, stepCollect) // a step that failed
	nft := benchTestRun("nftables", 10000, 1)
	nft.DumpCommand = "nft -j list ruleset"

	out := formatBenchReport("2 CPUs (test)", []benchRun{large, nft, small})
	for _, want := range []string{
		"machine: 2 CPUs (test)\n",
		"iptables mode (legacy backend), kube-proxy v1.36.3, one node, Services × 10 endpoints:\n",
		// sizes sorted, growth column with time and memory
		"| command | 1,000 Services | 10,000 Services | 1k → 10k |\n",
		"| kernel dump (`iptables-legacy-save`) | 1.00 s, 100 MiB | 12.0 s, 1200 MiB | 12×, 12× |\n",
		"| kube-proxy's own full sync (mean of 2) | 12.0 s | 144 s | 12× |\n",
		"| `collect --local -f node1.snapshot` | 3.00 s, 512 MiB | n/a | n/a |\n",
		// the goals are the agent's next read's (1.4×), the first read shown beside it
		"| kernel read + analysis, objects in memory, the agent's next read (test/e2e/benchagent) | 1.40 s, 250 MiB | 16.8 s, 3000 MiB | 12×, 12× |\n",
		"| the same, the agent's first read | 2.00 s, 250 MiB | 24.0 s, 3000 MiB | 12×, 12× |\n",
		"| `explain NS/NAME --snapshot FILE` (one Service) | 0.080 s | 0.15 s, 40 MiB | 1.9× |\n",
		// goals: 1.4× of the dump meets iptables' 1.5×, 2.5× RSS does not meet 2×; the goals
		// stated at 10k are judged there only
		"| kernel read + analysis vs dump, time (at 10k) | ≤ 1.5× | 1.4× (reference) | 1.4× met |\n",
		"| kernel read + analysis vs dump, peak RSS (at 10k) | ≤ 2.0× | 2.5× (reference) | 2.5× not met |\n",
		"| `drift --local` vs kube-proxy's full sync (at 10k) | ≤ 0.25× | 0.33× (reference) | 0.33× not met |\n",
		"| `drift --local` vs listing + dump | ≤ 1.5× | 1.3× met | 1.3× met |\n",
		"| `explain` from the snapshot (at 10k) | ≤ 100 ms | 80 ms (reference) | 150 ms not met |\n",
		"| linear growth, 1,000 → 10,000 Services | target | time | memory |  |\n",
		"| `drift --local -A` | ≤ 11× | 12× | 12× | not met |\n",
		"| `explain NS/NAME --snapshot FILE` (one Service) | ≤ 11× | 1.9× | n/a | met |\n",
		"| `collect --local -f node1.snapshot` | ≤ 11× | n/a | n/a | n/a |\n",
		"Files: 1,000 Services: dump 48.0 MiB, objects file 3.0 MiB, snapshot 700 KiB; 10,000 Services:",
		// nftables: its own table, a stricter goal (1.4× of the dump is not ≤ 1.0×), no growth table
		"nftables mode, kube-proxy v1.36.3, one node, Services × 10 endpoints:\n",
		"| kernel dump (`nft -j list ruleset`) | 1.00 s, 100 MiB |\n",
		"| kernel read + analysis vs dump, time (at 10k) | ≤ 1.0× | 1.4× not met |\n",
		"\nHow: every command runs in node1's network namespace",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "iptables mode") > strings.Index(out, "nftables mode") {
		t.Errorf("modes not in the order first seen:\n%s", out)
	}
	if strings.Count(out, "linear growth") != 1 {
		t.Errorf("want a growth table for iptables only (nftables ran one size):\n%s", out)
	}
}

func TestBenchFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{thousands(0), "0"},
		{thousands(999), "999"},
		{thousands(1000), "1,000"},
		{thousands(1234567), "1,234,567"},
		{shortCount(10000), "10k"},
		{shortCount(2500), "2,500"},
		{formatSeconds(1234 * time.Microsecond), "0.001 s"},
		{formatSeconds(910 * time.Millisecond), "0.91 s"},
		{formatSeconds(24500 * time.Millisecond), "24.5 s"},
		{formatSeconds(123 * time.Second), "123 s"},
		{formatMiB(2048), "2.0 MiB"},
		{formatMiB(1792 * 1024), "1792 MiB"},
		{formatRatio(0.25), "0.25×"},
		{formatRatio(9.04), "9.0×"},
		{formatRatio(26.9), "27×"},
		{formatBytes(0), "n/a"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if g := growthLimit(benchRun{Services: 1000}, benchRun{Services: 5000}); g != 5.5 {
		t.Errorf("growth limit 1k → 5k = %v, want 5.5", g)
	}
}
