package e2e

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseBenchConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	got, err := parseBenchConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := benchConfig{Sizes: []int{1000, 10000}, Modes: []string{"iptables", "nftables"}, Endpoints: 10, Workers: 8, FullSyncs: 2, Repeat: 1, IdleWindow: 2 * time.Minute}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	got, err = parseBenchConfig(env(map[string]string{
		"SVCTRACE_BENCH_SIZES": " 500, 2000", "SVCTRACE_BENCH_MODES": "nftables", "SVCTRACE_BENCH_ENDPOINTS": "3",
		"SVCTRACE_BENCH_BIN": "/tmp/x/kubectl-svctrace", "SVCTRACE_BENCH_REPEAT": "3", "SVCTRACE_BENCH_SNAPSHOT_EXT": ".snap",
		"SVCTRACE_BENCH_IDLE": "30s", "SVCTRACE_BENCH_AGENT_ONLY": "1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want = benchConfig{Sizes: []int{500, 2000}, Modes: []string{"nftables"}, Endpoints: 3, Workers: 8, FullSyncs: 2, Repeat: 3, Bin: "/tmp/x/kubectl-svctrace", SnapshotExt: ".snap",
		IdleWindow: 30 * time.Second, AgentOnly: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("set: got %+v, want %+v", got, want)
	}
	for _, c := range []struct{ key, value, msg string }{
		{"SVCTRACE_BENCH_SIZES", "1000,x", `item 2 is "x"`},
		{"SVCTRACE_BENCH_SIZES", "0", "positive"},
		{"SVCTRACE_BENCH_MODES", "iptables,ipvs", `item 2 is "ipvs"`},
		{"SVCTRACE_BENCH_ENDPOINTS", "2,3", "want one number"},
		{"SVCTRACE_BENCH_WORKERS", "-1", "SVCTRACE_BENCH_WORKERS"},
		{"SVCTRACE_BENCH_SNAPSHOT_EXT", "snap", "want an extension"},
		{"SVCTRACE_BENCH_SNAPSHOT_EXT", "./x", "want an extension"},
		{"SVCTRACE_BENCH_IDLE", "120", "want a duration"},
		{"SVCTRACE_BENCH_IDLE", "-5s", "want a duration"},
		{"SVCTRACE_BENCH_AGENT_ONLY", "yes", "want 1 or 0"},
	} {
		_, err := parseBenchConfig(env(map[string]string{c.key: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s=%s: error %v, want one containing %q", c.key, c.value, err, c.msg)
		}
	}
}

func TestParseBenchConfigIdle(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := parseBenchConfig(env(map[string]string{"SVCTRACE_BENCH_IDLE": "0"}))
	if err != nil || c.IdleWindow != 0 {
		t.Errorf("SVCTRACE_BENCH_IDLE=0: window %v, error %v; want none, no error", c.IdleWindow, err)
	}
	_, err = parseBenchConfig(env(map[string]string{"SVCTRACE_BENCH_IDLE": "0", "SVCTRACE_BENCH_AGENT_ONLY": "1"}))
	if err == nil || !strings.Contains(err.Error(), "measures nothing") {
		t.Errorf("agent only without a window: error %v, want one saying it measures nothing", err)
	}
}
