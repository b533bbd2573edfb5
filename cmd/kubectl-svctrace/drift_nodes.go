package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"

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
	if err != nil {
		return err
	}
	nodes := clusterNodeNames(c)
	if len(nodes) == 0 {
		return fmt.Errorf("the cluster lists no nodes")
	}
	reports := agent.ReadReports(ctx, r, nodes, inspect.FanOut{Concurrency: o.concurrency, Timeout: o.nodeTimeout, Progress: progressOn(o.ErrOut)})
	found := make([]analysis.NodeFindings, len(reports))
	for i, nr := range reports {
		found[i] = nr.Findings()
	}
	rep, err := analysis.DriftOfNodes(c, analysis.DriftOptions{Family: o.family, Scope: analysis.Scope{Service: o.ref, Namespace: o.scopeNamespace()}}, found)
	if err != nil {
		return err
	}
	rep.Notes = append(notes, rep.Notes...)
	if err := o.print(rep, func(wide bool) { analysis.RenderDrift(o.Out, rep, wide) }); err != nil {
		return err
	}
	switch {
	case len(rep.Findings) > 0:
		return &exitCodeError{code: exitDrift}
	case len(rep.Unreadable()) > 0:
		return &exitCodeError{code: exitUnreadable}
	}
	return nil
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
