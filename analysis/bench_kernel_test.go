//go:build linux

package analysis_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// benchmarkReadAnalyze is the node agent's first check in iptables mode
// on the legacy backend, as test/e2e/benchagent measures it in the lab:
// with the API objects in memory, read kube-proxy's rules of both families
// from the kernel of a network namespace of its own, and check every
// Service, the node's model view built meanwhile, filling the memo the
// next check takes its unchanged Services from (analysis.Memo). The
// baseline, measured in the same run (the fastest of three), is
// iptables-legacy-save of the same namespace: x-save is the work's time
// over the tool's, the ratio the node-scale goal sets (1.5); rss-x-save
// the peak RSS of this process during the work (the API objects held, as
// the agent holds them) over the tool's peak RSS (the goal: 2).
func benchmarkReadAnalyze(b *testing.B, services int) {
	ns := netnstest.New(b, "bench", "iptables-legacy-restore", "iptables-legacy-save")
	netnstest.Nfacct(b, ns, "ct_state_invalid_dropped_pkts")
	netnstest.Run(b, ns, snapshottest.IPTablesSave(services, 10), "iptables-legacy-restore")
	save, saveRSS := time.Duration(1<<63-1), int64(0)
	for range 3 {
		cmd := exec.Command("ip", "netns", "exec", ns, "iptables-legacy-save")
		start := time.Now()
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatalf("iptables-legacy-save: %v", err)
		}
		save = min(save, time.Since(start))
		saveRSS = max(saveRSS, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10)
	}
	base := snapshottest.Node(services, 10)
	base.Nodes[0].Dumps = nil // read from the kernel instead
	check := newChecker(b, ns, base)
	var took time.Duration
	var peak int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		debug.FreeOSMemory()
		resetPeakRSS(b)
		b.StartTimer()
		start := time.Now()
		r := check(analysis.NewMemo())
		took += time.Since(start)
		peak = max(peak, procStatus(b, "VmHWM"))
		if len(r.Findings) != 0 || r.Nodes[0].Frontends != services {
			b.Fatalf("%d frontends checked, %d findings (first %+v); want %d and none", r.Nodes[0].Frontends, len(r.Findings), r.Findings, services)
		}
	}
	b.ReportMetric(float64(took)/float64(b.N)/float64(save), "x-save")
	b.ReportMetric(float64(peak)/float64(saveRSS), "rss-x-save")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(saveRSS)/(1<<20), "save-MiB")
}

func BenchmarkReadAnalyze1k(b *testing.B)  { benchmarkReadAnalyze(b, 1000) }
func BenchmarkReadAnalyze10k(b *testing.B) { benchmarkReadAnalyze(b, 10000) }

// newChecker returns the agent's check of the namespace's legacy tables
// against base's objects (the model prepared while the kernel is read), as
// benchmarkReadAnalyze makes it, with a memo when not nil.
func newChecker(b *testing.B, ns string, base *snapshot.Snapshot) func(*analysis.Memo) *analysis.DriftReport {
	path := filepath.Join("/run/netns", ns)
	read := kernelReader(b)
	return func(memo *analysis.Memo) *analysis.DriftReport {
		model := analysis.PrepareModel(base.Cluster, "node1", "IPv4", "")
		node := base.Nodes[0]
		err := netns.Run(path, func() error {
			for _, c := range []string{"iptables-save", "ip6tables-save"} {
				d, err := read(c, "legacy")
				if err != nil {
					return err
				}
				node.Dumps = append(node.Dumps, d)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind, Metadata: base.Metadata,
			Cluster: base.Cluster, Nodes: []snapshot.NodeState{node}}
		r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Models: []*analysis.Model{model}, Memo: memo})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
}

// kernelReader reads a dump from the kernel with the plane that reads that
// part of it, as collect --local does.
func kernelReader(b *testing.B) func(collector, backend string) (snapshot.Dump, error) {
	var readers []dataplane.KernelReader
	for _, l := range plugins.Loaders() {
		if r, ok := l.(dataplane.KernelReader); ok {
			readers = append(readers, r)
		}
	}
	if len(readers) == 0 {
		b.Fatal("no plane reads the kernel")
	}
	return func(collector, backend string) (snapshot.Dump, error) {
		var err error
		for _, r := range readers {
			var d snapshot.Dump
			if d, err = r.ReadKernel(collector, backend); err == nil {
				return d, nil
			}
		}
		return snapshot.Dump{}, err
	}
}

// resetPeakRSS resets the process's peak RSS to its RSS now (Linux's
// clear_refs 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak RSS: %v", err)
	}
}

// procStatus is a size field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("/proc/self/status %s: %v", field, err)
			}
			return kb << 10
		}
	}
	b.Fatal(fmt.Errorf("/proc/self/status has no %s", field))
	return 0
}
