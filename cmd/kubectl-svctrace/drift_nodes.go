package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/inspect"
)

// exitUnreadable: no drift on the nodes read, but some could not be.
const exitUnreadable = 3

// runAllNodes is drift --all-nodes from a workstation: every node's agent
// is asked for its report, and the reports are put together.
func (o *driftOptions) runAllNodes(ctx context.Context) error {
	r, err := o.remote()
	if err != nil {
		return err
	}
	// The objects resolve the scope (a Service that is not there is an
	// error with close matches) and list the nodes.
	c, notes, err := inspect.CollectAPI(ctx, r.Client, "")
	var nodes []string
	switch {
	case apierrors.IsForbidden(err) && o.ref == nil:
		// The agents have the objects: their checks, and the comparison
		// of the nodes, need none here. The nodes are those they run on.
		if nodes, err = r.AgentNodes(ctx); err != nil {
			return err
		}
		notes = append(notes, "the API objects cannot be read here (forbidden): the nodes are those the agents run on, each checked by its agent")
	case err != nil:
		return err
	default:
		nodes = clusterNodeNames(c)
	}
	if len(nodes) == 0 {
		return fmt.Errorf("the cluster lists no nodes")
	}
	reports := agent.ReadReports(ctx, r, nodes, inspect.FanOut{Concurrency: o.concurrency, Timeout: o.nodeTimeout, Progress: progressOn(o.ErrOut)})
	found := make([]analysis.NodeFindings, len(reports))
	for i, nr := range reports {
		found[i] = nr.Findings()
	}
	rep, err := analysis.DriftOfNodes(c, analysis.DriftOptions{Family: o.family, Scope: o.scope()}, found)
	if err != nil {
		return err
	}
	rep.Notes = append(notes, rep.Notes...)
	return o.printDrift(rep)
}

// progressOn shows how many nodes are read on w, when that is a terminal.
func progressOn(w io.Writer) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var mu sync.Mutex
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "\rreading nodes: %d/%d", done, total)
		if done == total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}
