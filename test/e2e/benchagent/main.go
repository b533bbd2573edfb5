//go:build benchnode && linux

// Command benchagent is hack/bench-node.sh's measure of what the node agent
// repeats: with the API objects already in memory, read the kernel's state
// of the network namespace it runs in and check it for drift, as drift
// --local does. It decodes --objects and reads kube-proxy's /configz first,
// untimed (an agent holds both), then times one read and analysis (the
// node's model view built meanwhile, as drift --local does) and prints the
// seconds it took, and the drift summary, as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
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
	Seconds  float64 `json:"seconds"`
	Findings int     `json:"findings"`
	Checked  int     `json:"frontendsChecked"`
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

	start := time.Now()
	// As drift --local does: the node's view is built while the kernel's
	// rules are dumped.
	model := analysis.PrepareModel(c, node, "IPv4")
	ns, _, err := inspect.CollectLocal(ctx, node, inspect.LocalOptions{ConntrackDst: inspect.ServiceAddrs(c)})
	if err != nil {
		return err
	}
	ns.KubeProxy = pc
	s := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Metadata: snapshot.Metadata{Source: "live"}, Cluster: c, Nodes: []snapshot.NodeState{ns}}
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Models: []*analysis.Model{model}})
	if err != nil {
		return err
	}
	took := time.Since(start)

	res := result{Seconds: took.Seconds(), Findings: len(r.Findings)}
	for _, n := range r.Nodes {
		res.Checked += n.Frontends
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
