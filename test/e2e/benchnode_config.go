package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// benchConfig is what hack/bench-node.sh passes to TestBenchNode through the environment.
type benchConfig struct {
	Sizes     []int    // SVCTRACE_BENCH_SIZES: Services per run, default 1000,10000
	Modes     []string // SVCTRACE_BENCH_MODES: kube-proxy modes, default iptables,nftables
	Endpoints int      // SVCTRACE_BENCH_ENDPOINTS: endpoints per Service, default 10
	Workers   int      // SVCTRACE_BENCH_WORKERS: API requests in flight while creating, default 8
	FullSyncs int      // SVCTRACE_BENCH_FULL_SYNCS: kube-proxy full syncs forced and averaged, default 2
	Repeat    int      // SVCTRACE_BENCH_REPEAT: runs of each command, the fastest kept, default 1
	Bin       string   // SVCTRACE_BENCH_BIN: the svctrace binary; empty: the test builds one
	Report    string   // SVCTRACE_BENCH_REPORT: also write the report to this file
	// SnapshotExt (SVCTRACE_BENCH_SNAPSHOT_EXT) ends the snapshot file's name, choosing its
	// format (".yaml", ".json", ".snap"); empty: no extension, the default format.
	SnapshotExt string
	// ProfileDir (SVCTRACE_BENCH_PROFILE_DIR), when set, gets CPU profiles of drift --local
	// and explain, from runs of their own after the measured ones.
	ProfileDir string
	// IdleWindow (SVCTRACE_BENCH_IDLE, a Go duration, default 120s) is how long the node agent
	// is measured at rest, after its first check; 0 leaves the agent at rest out.
	IdleWindow time.Duration
	// AgentOnly (SVCTRACE_BENCH_AGENT_ONLY=1) measures the dump and the agent at rest only,
	// none of the CLI's commands: a shorter run for the agent's section.
	AgentOnly bool
}

// parseBenchConfig reads the configuration through getenv (os.Getenv in the test).
func parseBenchConfig(getenv func(string) string) (benchConfig, error) {
	c := benchConfig{Bin: getenv("SVCTRACE_BENCH_BIN"), Report: getenv("SVCTRACE_BENCH_REPORT"), SnapshotExt: getenv("SVCTRACE_BENCH_SNAPSHOT_EXT"),
		ProfileDir: getenv("SVCTRACE_BENCH_PROFILE_DIR")}
	if c.SnapshotExt != "" && (!strings.HasPrefix(c.SnapshotExt, ".") || strings.ContainsRune(c.SnapshotExt, '/')) {
		return c, fmt.Errorf("SVCTRACE_BENCH_SNAPSHOT_EXT=%q: want an extension such as .snap", c.SnapshotExt)
	}
	c.IdleWindow = 2 * time.Minute
	if v := strings.TrimSpace(getenv("SVCTRACE_BENCH_IDLE")); v != "" {
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return c, fmt.Errorf("SVCTRACE_BENCH_IDLE=%q: want a duration such as 120s, or 0", v)
		}
		c.IdleWindow = d
	}
	switch v := strings.TrimSpace(getenv("SVCTRACE_BENCH_AGENT_ONLY")); v {
	case "", "0":
	case "1":
		c.AgentOnly = true
	default:
		return c, fmt.Errorf("SVCTRACE_BENCH_AGENT_ONLY=%q: want 1 or 0", v)
	}
	if c.AgentOnly && c.IdleWindow == 0 {
		return c, fmt.Errorf("SVCTRACE_BENCH_AGENT_ONLY=1 with SVCTRACE_BENCH_IDLE=0 measures nothing")
	}
	var err error
	if c.Sizes, err = parseInts("SVCTRACE_BENCH_SIZES", getenv("SVCTRACE_BENCH_SIZES"), "1000,10000"); err != nil {
		return c, err
	}
	modes := getenv("SVCTRACE_BENCH_MODES")
	if strings.TrimSpace(modes) == "" {
		modes = "iptables,nftables"
	}
	for i, m := range strings.Split(modes, ",") {
		m = strings.TrimSpace(m)
		if m != "iptables" && m != "nftables" {
			return c, fmt.Errorf("SVCTRACE_BENCH_MODES=%q: item %d is %q, want iptables or nftables", modes, i+1, m)
		}
		c.Modes = append(c.Modes, m)
	}
	for _, v := range []struct {
		name string
		dst  *int
		def  int
	}{
		{"SVCTRACE_BENCH_ENDPOINTS", &c.Endpoints, 10},
		{"SVCTRACE_BENCH_WORKERS", &c.Workers, 8},
		{"SVCTRACE_BENCH_FULL_SYNCS", &c.FullSyncs, 2},
		{"SVCTRACE_BENCH_REPEAT", &c.Repeat, 1},
	} {
		ns, err := parseInts(v.name, getenv(v.name), strconv.Itoa(v.def))
		if err != nil {
			return c, err
		}
		if len(ns) != 1 {
			return c, fmt.Errorf("%s=%q: want one number", v.name, getenv(v.name))
		}
		*v.dst = ns[0]
	}
	return c, nil
}

// parseInts parses a comma-separated list of positive numbers (def when value is empty).
func parseInts(name, value, def string) ([]int, error) {
	if strings.TrimSpace(value) == "" {
		value = def
	}
	var out []int
	for i, f := range strings.Split(value, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: item %d is %q, want a positive number", name, value, i+1, f)
		}
		out = append(out, n)
	}
	return out, nil
}
