// Command fleetagents runs the APIs of many node agents in one process for
// the fleet benchmark (test/e2e/fleet_test.go, hack/bench-fleet.sh): each
// a real nodeapi server started by nodeapi.Start with its own certificate
// and API client, authenticating and authorising callers against the API
// server, and serving an agent report made by the agent's analysis from a
// bundled snapshot. It prints "ready" once every API listens, and runs
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/svctrace/svctrace/test/fleet"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the agents' kubeconfig (the svctrace-agent ServiceAccount's token)")
	agentsFile := flag.String("agents", "", "JSON list of the agents: node, pod, address")
	snap := flag.String("snapshot", "", "the snapshot whose node the agents' report checks")
	snapNode := flag.String("snapshot-node", "node1", "that node")
	silent := flag.String("silent", "", "also listen here and never answer (an agent that hangs)")
	workers := flag.Int("workers", 16, "agents started at once")
	flag.Parse()
	if err := run(*kubeconfig, *agentsFile, *snap, *snapNode, *silent, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "fleetagents:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, agentsFile, snap, snapNode, silent string, workers int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	data, err := os.ReadFile(agentsFile)
	if err != nil {
		return fmt.Errorf("--agents: %w", err)
	}
	var agents []fleet.Agent
	if err := json.Unmarshal(data, &agents); err != nil {
		return fmt.Errorf("--agents %s: %w", agentsFile, err)
	}
	rep, err := fleet.Report(snap, snapNode)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if silent != "" {
		if err := fleet.Silent(ctx, silent); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	errc := make(chan error, len(agents))
	report := func(node string) ([]byte, error) { return fleet.ReportFor(rep, node) }
	if err := fleet.Start(ctx, cfg, agents, report, workers, log, errc); err != nil {
		return err
	}
	fmt.Printf("ready: %d agents\n", len(agents))
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil {
				log.Error("an agent's API stopped", "err", err)
			}
		}
	}
}
