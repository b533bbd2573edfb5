//go:build benchnode && linux

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// TestBenchNode is the node-scale benchmark of issue 9, run by hack/bench-node.sh (which
// passes its configuration in SVCTRACE_BENCH_*, see benchConfig). For every mode and size: a
// one-node lab with the real kube-proxy, N Services of 10 endpoints created through the API,
// then, once kube-proxy has synced them, each command's wall time and peak RSS beside the
// kernel's dump, kube-proxy's own full sync and the API listing, in one run. It prints one
// table per mode (formatBenchReport). A goal not met is reported, not failed; a measurement
// that fails, or drift on these healthy nodes, fails the test.
func TestBenchNode(t *testing.T) {
	cfg, err := parseBenchConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	bin := cfg.Bin
	if bin == "" {
		bin = buildSvctrace(t)
	}
	agent := buildBenchAgent(t)
	machine := benchMachine()
	var runs []benchRun
	for _, mode := range cfg.Modes {
		for _, n := range cfg.Sizes {
			t.Run(fmt.Sprintf("%s-%d", mode, n), func(t *testing.T) {
				r := &benchRun{Mode: mode, Services: n, Endpoints: cfg.Endpoints, FullSyncs: cfg.FullSyncs,
					Results: map[string]benchResult{}, Bytes: map[string]int64{}}
				// A run cut short still shows what it measured.
				defer func() {
					runs = append(runs, *r)
					fmt.Printf("\n%s\n", formatBenchReport(machine, []benchRun{*r}))
				}()
				benchNode(t, cfg, bin, agent, r)
			})
		}
	}
	report := formatBenchReport(machine, runs)
	fmt.Printf("\n==== node-scale benchmark ====\n%s", report)
	if cfg.Report != "" {
		if err := os.WriteFile(cfg.Report, []byte(report), 0o644); err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}
}

// benchNode runs one mode and size, filling r as it goes: bin is svctrace, agent
// test/e2e/benchagent.
func benchNode(t *testing.T, cfg benchConfig, bin, agent string, r *benchRun) {
	objs, err := makeBenchObjects(r.Services, r.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode == "iptables" {
		useLegacyIPTables(t)
	}
	l := lab.Start(t, lab.Options{Nodes: 1})
	r.ProxyVersion = l.ProxyVersion
	if err := l.StartKubeProxy("node1", r.Mode, "--cluster-cidr="+benchClusterCIDR); err != nil {
		t.Fatal(err)
	}
	if r.Mode == "iptables" {
		r.Backend = iptablesBackend(t, l)
		r.DumpCommand = "iptables-" + map[string]string{"legacy": "legacy", "nf_tables": "nft"}[r.Backend] + "-save"
	} else {
		r.DumpCommand = "nft -j list ruleset"
	}

	createBenchObjects(t, l, cfg.Workers, objs)
	waitBenchRules(t, l, r)
	r.Results[stepFullSync] = forceFullSyncs(t, l, cfg.FullSyncs)

	ns, err := l.NetNS("node1")
	if err != nil {
		t.Fatal(err)
	}
	busy := waitIdle(3 * time.Minute)
	t.Logf("load before measuring: %s; CPUs %.0f%% busy", loadAverage(), 100*busy)
	dir := t.TempDir()
	m := measurer{t: t, ns: ns, dir: dir, repeat: cfg.Repeat}
	dumpOut := filepath.Join(dir, "dump")
	r.Results[stepDump] = m.run("dump", dumpOut, strings.Fields(r.DumpCommand)...)
	r.Bytes["dump"] = fileSize(dumpOut)

	if cfg.AgentOnly {
		measureAgentAtRest(t, l, bin, r, cfg.IdleWindow, objs.Middle)
		return
	}
	objFile := filepath.Join(dir, "objects.json")
	r.Results[stepList] = listObjects(t, l, objFile, cfg.Repeat)
	r.Bytes["objects"] = fileSize(objFile)

	r.SnapshotFile = "node1.snapshot" + cfg.SnapshotExt // no extension: the default format
	snap := filepath.Join(dir, r.SnapshotFile)
	r.Results[stepDrift] = m.run("drift", "", bin, "drift", "--local", "--node", "node1", "--kubeconfig", l.Kubeconfig, "-A")
	r.Results[stepAnalysis], r.Results[stepAnalysisFirst] = m.runTimed("agent", agent, "--objects", objFile, "--node", "node1")
	r.Results[stepCollect] = m.run("collect", "", bin, "collect", "--local", "--node", "node1", "--kubeconfig", l.Kubeconfig, "-A", "-f", snap)
	r.Bytes["snapshot"] = fileSize(snap)
	r.Results[stepDriftSnapshot] = m.run("drift --snapshot", "", bin, "drift", "--snapshot", snap, "--node", "node1", "-A")
	explainOut := filepath.Join(dir, "explain.txt")
	r.Results[stepExplain] = m.run("explain", explainOut, bin, "explain", objs.Middle, "--snapshot", snap, "--node", "node1")
	if b, err := os.ReadFile(explainOut); err == nil {
		if _, name, _ := strings.Cut(objs.Middle, "/"); !strings.Contains(string(b), name) {
			t.Errorf("explain %s does not name the Service:\n%s", objs.Middle, headLines(string(b), 30))
		}
	}
	if cfg.ProfileDir != "" {
		// Runs of their own: a profile costs a little, and the measured runs are done.
		prefix := filepath.Join(cfg.ProfileDir, fmt.Sprintf("%s-%d-", r.Mode, r.Services))
		m.run("drift (profiled)", "", bin, "drift", "--local", "--node", "node1", "--kubeconfig", l.Kubeconfig, "-A",
			"--profile", "cpu", "--profile-output", prefix+"drift-local.pprof")
		m.run("explain (profiled)", "", bin, "explain", objs.Middle, "--snapshot", snap, "--node", "node1",
			"--profile", "cpu", "--profile-output", prefix+"explain.pprof")
		// The inputs beside the profiles, to rerun a command offline: the
		// snapshot holds the node's dumps, the objects file the API objects.
		for _, f := range []string{snap, objFile} {
			if err := copyFile(f, prefix+filepath.Base(f)); err != nil {
				t.Error(err)
			}
		}
		t.Logf("CPU profiles in %s*.pprof, the snapshot and objects beside them", prefix)
	}
	if cfg.IdleWindow > 0 {
		// Last: the agent is measured at rest once the commands are done, and its
		// kernel edit leaves the node drifted.
		busy := waitIdle(3 * time.Minute)
		t.Logf("load before the agent at rest: %s; CPUs %.0f%% busy", loadAverage(), 100*busy)
		measureAgentAtRest(t, l, bin, r, cfg.IdleWindow, objs.Middle)
	}
}

func createBenchObjects(t *testing.T, l *lab.Lab, workers int, objs benchObjects) {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	for _, batch := range []struct {
		what string
		objs []lab.Create
	}{{"Namespaces", objs.Namespaces}, {"Services", objs.Services}, {"EndpointSlices", objs.Slices}} {
		s := time.Now()
		if err := l.CreateAll(ctx, workers, batch.objs); err != nil {
			t.Fatal(err)
		}
		d := time.Since(s)
		t.Logf("created %d %s in %v (%.0f/s)", len(batch.objs), batch.what, d.Round(time.Millisecond), float64(len(batch.objs))/d.Seconds())
	}
	t.Logf("objects created in %v", time.Since(start).Round(time.Millisecond))
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// benchMachine describes the machine: CPUs and their model, memory, kernel, load.
func benchMachine() string {
	model, mem := cpuAndMemory()
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs (%s), %s, %s, %s; load average %s at the start", runtime.NumCPU(), model, mem, kernel,
		time.Now().UTC().Format("2006-01-02"), loadAverage())
}

// waitIdle waits, up to limit, until the CPUs are less than a tenth busy over two seconds
// (kube-proxy's last sync, the API server's work on the objects, settle) and returns how busy
// they were last.
func waitIdle(limit time.Duration) float64 {
	deadline := time.Now().Add(limit)
	for {
		busy := cpuBusy(2 * time.Second)
		if busy < 0.1 || time.Now().After(deadline) {
			return busy
		}
	}
}

// cpuBusy is the share of CPU time not idle (nor waiting for I/O) over d, from /proc/stat; 0
// when it cannot be read.
func cpuBusy(d time.Duration) float64 {
	sample := func() (idle, total float64) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0
		}
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseFloat(f, 64)
			total += v
			if i == 3 || i == 4 { // idle, iowait
				idle += v
			}
		}
		return idle, total
	}
	i0, t0 := sample()
	time.Sleep(d)
	i1, t1 := sample()
	if t1 <= t0 {
		return 0
	}
	return 1 - (i1-i0)/(t1-t0)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
