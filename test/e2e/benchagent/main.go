//go:build benchnode && linux

// Command benchagent is hack/bench-node.sh's measure of what the node agent
// repeats: with the API objects already in memory, read the kernel's state
// of the network namespace it runs in and check it for drift, as drift
// --local does. It decodes --objects and reads kube-proxy's /configz first,
// untimed (an agent holds both), then times a read and analysis (the
// node's model view built meanwhile, as drift --local does) twice with one
// reader, as the agent reads again and again, and prints the seconds each
// took and the drift summary, as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

func main() {
	objects := flag.String("objects", "", "API objects (a v1 List) of the cluster")
	node := flag.String("node", "", "the node this network namespace is")
	metrics := flag.String("kube-proxy-metrics-address", inspect.DefaultKubeProxyMetricsAddress, "where kube-proxy serves /configz")
	flag.Parse()
	if err := run(*objects, *node, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "benchagent:", err)
		os.Exit(1)
	}
}

// result is what benchagent prints.
type result struct {
	Seconds      float64 `json:"seconds"`      // the next read's
	FirstSeconds float64 `json:"firstSeconds"` // the first read's
	Findings     int     `json:"findings"`
	Checked      int     `json:"frontendsChecked"`
}

func run(objects, node, metrics string) error {
	if objects == "" || node == "" {
		return fmt.Errorf("--objects and --node are needed")
	}
	data, err := os.ReadFile(objects)
	if err != nil {
		return err
	}
	c, _, err := model.DecodeObjects(data)
	if err != nil {
		return fmt.Errorf("objects file %s: %w", objects, err)
	}
	ctx := context.Background()
	pc, err := inspect.ProxyConfigFromConfigz(ctx, metrics)
	if err != nil {
		return err
	}

	// The agent reads with one RuleReader all its life: its first read, then
	// the next ones, which may take from the read before what cannot have
	// changed. Both are timed; the next one is what the agent repeats.
	reader := inspect.NewRuleReader()
	first, err := check(ctx, reader, c, node, pc)
	if err != nil {
		return err
	}
	debug.FreeOSMemory() // as the agent does after each check
	next, err := check(ctx, reader, c, node, pc)
	if err != nil {
		return err
	}
	if next.findings != first.findings || next.checked != first.checked {
		return fmt.Errorf("the next read found %d findings in %d frontends, the first %d in %d",
			next.findings, next.checked, first.findings, first.checked)
	}
	res := result{Seconds: next.took.Seconds(), FirstSeconds: first.took.Seconds(), Findings: next.findings, Checked: next.checked}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// checked is one timed read and analysis.
type checked struct {
	took              time.Duration
	findings, checked int
}

func check(ctx context.Context, reader *inspect.RuleReader, c *snapshot.Cluster, node string, pc snapshot.ProxyConfig) (checked, error) {
	start := time.Now()
	rules := reader.Read(ctx)
	// As drift --local does: the node's view is built while the kernel's
	// rules are dumped.
	m := analysis.PrepareModel(c, node, "IPv4", pc.Version)
	ns, _, err := inspect.CollectLocal(ctx, node, inspect.LocalOptions{ConntrackDst: inspect.ServiceAddrs(c), Rules: rules})
	if err != nil {
		return checked{}, err
	}
	ns.KubeProxy = pc
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Metadata: snapshot.Metadata{Source: "live"}, Cluster: c, Nodes: []snapshot.NodeState{ns}}
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Models: []*analysis.Model{m}})
	if err != nil {
		return checked{}, err
	}
	res := checked{took: time.Since(start), findings: len(r.Findings)}
	for _, n := range r.Nodes {
		res.checked += n.Frontends
	}
	return res, nil
}
