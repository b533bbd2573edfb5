//go:build linux

package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// fleetResult is what TestFleet measured.
type fleetResult struct {
	Nodes   int
	Machine string
	Start   time.Time
	// Wall is drift --all-nodes's wall time, CLI the API server's counts
	// during it (the CLI's and the agents' requests), AgentBytes the
	// bytes the CLI read from the agents.
	Wall       time.Duration
	CLI        apiLoad
	AgentBytes int
	// The baselines: kubectl get nodes,pods -A -o json (ListOut bytes
	// written), and one GET per node at the CLI's concurrency.
	ListWall, PerNodeWall time.Duration
	ListAPI, PerNodeAPI   apiLoad
	ListOut               int
}

func fleetMachine() string {
	model, mem := cpuAndMemory()
	return fmt.Sprintf("%d CPUs (%s), %s, %s", runtime.NumCPU(), model, mem, runtime.Version())
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

// formatFleetReport is the Markdown report of a fleet run.
func formatFleetReport(r fleetResult) string {
	var b strings.Builder
	n := float64(r.Nodes)
	fmt.Fprintf(&b, "Fleet benchmark: `drift --all-nodes -A` over %d nodes, %s, on %s.\n\n", r.Nodes, r.Start.UTC().Format(time.RFC3339), r.Machine)
	split := r.CLI.split()
	cli, agents, others := split[byCLI], split[byAgents], split[byOthers]
	fmt.Fprintf(&b, "| measure | total | per node |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| wall time | %.2f s | %.2f ms |\n", r.Wall.Seconds(), r.Wall.Seconds()*1000/n)
	fmt.Fprintf(&b, "| the CLI's requests to the API server | %.0f | %.4f |\n", cli[0], cli[0]/n)
	fmt.Fprintf(&b, "| bytes the API server sent the CLI | %s | %s |\n", kib(cli[1]), kib(cli[1]/n))
	fmt.Fprintf(&b, "| the agents' requests (TokenReview, SubjectAccessReview) | %.0f | %.2f |\n", agents[0], agents[0]/n)
	fmt.Fprintf(&b, "| the API server's own requests meanwhile | %.0f | |\n", others[0])
	fmt.Fprintf(&b, "| bytes the CLI read from the agents | %s | %s |\n\n", kib(float64(r.AgentBytes)), kib(float64(r.AgentBytes)/n))

	fmt.Fprintf(&b, "The API server's counts during the run (apiserver_request_total, apiserver_response_sizes_sum; it measures the answers to reads only, so a review's is not measured):\n\n")
	fmt.Fprintf(&b, "| request | whose | count | bytes |\n|---|---|---:|---:|\n")
	for _, k := range r.CLI.keys() {
		size := "not measured"
		if v, ok := r.CLI.Bytes[k]; ok && (strings.HasPrefix(k, "GET ") || strings.HasPrefix(k, "LIST ")) {
			size = kib(v)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s |\n", k, whose(k), r.CLI.Requests[k], size)
	}
	listAll := 0.0
	for _, v := range r.ListAPI.Requests {
		listAll += v
	}
	listBytes := r.ListAPI.Bytes["LIST nodes"] + r.ListAPI.Bytes["LIST pods"]
	perNode := r.PerNodeAPI.Requests["GET nodes"]
	fmt.Fprintf(&b, "\nBaselines, measured in the same run:\n\n")
	fmt.Fprintf(&b, "| baseline | wall time | API requests | bytes from the API server | drift --all-nodes / baseline |\n|---|---:|---:|---:|---|\n")
	fmt.Fprintf(&b, "| `kubectl get nodes,pods -A -o json` | %.2f s | %.0f | %s | time %.1f×, requests %.1f×, bytes %.2f× |\n",
		r.ListWall.Seconds(), listAll, kib(listBytes), ratio(r.Wall.Seconds(), r.ListWall.Seconds()), ratio(cli[0], listAll), ratio(cli[1], listBytes))
	fmt.Fprintf(&b, "| one GET per node through the API server, 16 at once | %.2f s | %.0f | %s | time %.1f×, requests %.4f× |\n",
		r.PerNodeWall.Seconds(), perNode, kib(r.PerNodeAPI.Bytes["GET nodes"]), ratio(r.Wall.Seconds(), r.PerNodeWall.Seconds()), ratio(cli[0], perNode))
	return b.String()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
