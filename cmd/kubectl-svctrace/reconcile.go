package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/reconcile"
)

func newReconcileCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Repair a node's kernel state (dry run unless --apply)",
	}
	cmd.AddCommand(newReconcileConntrackCommand(streams), newReconcileRulesCommand(streams), newReconcileRollbackCommand(streams),
		newReconcileWriteDetachedCommand())
	return cmd
}

// newReconcileWriteDetachedCommand is the process an apply starts to make
// a plane's kernel writes, which svctrace stopped does not cut short.
func newReconcileWriteDetachedCommand() *cobra.Command {
	return &cobra.Command{
		Use:    dataplane.DetachedWriteCommand + " MODE JOB",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return reconcile.WriteDetached(cmd.Context(), args[0], args[1])
		},
	}
}

type reconcileConntrackOptions struct {
	*commonOptions
	apply bool
}

func newReconcileConntrackCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &reconcileConntrackOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "conntrack --node N [--apply]",
		Short: "Delete exactly the conntrack entries that send clients to backends that are gone",
		Long: `List the conntrack entries of a node that NAT a Service's clients to a backend
that is no longer a serving endpoint (or no longer in the node's rules), and
UDP entries made while a Service had no endpoints: the entries a failed
kube-proxy cleanup leaves behind. With --apply, delete those entries and
nothing else, then read the table again and report what is left: on the node
with --local, or from a workstation through the node's agent, for a caller
the API server lets repair the node (the svctrace-repair role of
deploy/cli-rbac.yaml). TCP and SCTP flows to terminating endpoints drain by themselves and are
left alone.

Exit codes: 0 nothing stale (or all of it deleted), 1 stale entries listed
(dry run) or left after --apply, 2 error.`,
		Example: `  kubectl svctrace reconcile conntrack --node node1
  kubectl svctrace reconcile conntrack --node node1 --apply
  kubectl svctrace reconcile conntrack --local --node "$(hostname)" --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.completeApply(o.apply, true); err != nil {
				return err
			}
			if o.apply && !o.local {
				return o.applyThroughAgent(cmd.Context())
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().BoolVar(&o.apply, "apply", false, "Delete the stale entries (default: only list them)")
	return cmd
}

// completeApply completes and validates the options of a repair, which
// with --apply writes to the kernel of the node it runs on (--local), or
// where remote allows, of the node through its agent.
func (o *commonOptions) completeApply(apply, remote bool) error {
	if err := o.complete(); err != nil {
		return err
	}
	switch {
	case apply && o.snapshotFile != "":
		return errors.New("--apply changes a node's kernel: not with --snapshot")
	case apply && !o.local && !remote:
		return errors.New("--apply changes the kernel: it needs --local (run it on the node)")
	}
	return o.validate()
}

func (o *reconcileConntrackOptions) run(cmd *cobra.Command) error {
	_, a, err := o.analyzeNode(cmd.Context())
	if err != nil {
		return err
	}
	if a.Expected == nil {
		return errors.New("conntrack entries are judged against the API objects: the snapshot has none")
	}
	r := reconcile.NewConntrackReport(a.Node, o.apply)
	if o.apply {
		rep, err := reconcile.RepairConntrack(cmd.Context(), reconcile.KernelConntrack{}, a, a.Flows)
		if err != nil {
			return err
		}
		r.Fill(rep)
	} else {
		r.Fill(&reconcile.ConntrackRepair{Stale: reconcile.StaleFlows(a.Flows)})
	}
	if err := o.print(r, func(wide bool) { renderRepair(o.Out, r) }); err != nil {
		return err
	}
	if len(r.Remaining) > 0 || !o.apply && len(r.Stale) > 0 {
		return &exitCodeError{code: exitDrift}
	}
	return nil
}

func renderRepair(w io.Writer, r *reconcile.ConntrackReport) {
	verb := "would delete"
	if r.Applied {
		verb = "deleted"
	}
	fmt.Fprintf(w, "node %s: %s\n", r.Node, wording.Count(len(r.Stale), "stale conntrack entry", "stale conntrack entries"))
	for _, f := range r.Stale {
		fmt.Fprintf(w, "  %s %s  %s -> %s: %s\n", verb, f.Service, f.Client, orNone(f.Backend), f.Reason)
		fmt.Fprintf(w, "      %s\n", f.Text)
	}
	if r.Applied {
		fmt.Fprintf(w, "deleted %d, already gone %d; read again: %d stale entries left\n", r.Deleted, r.Gone, len(r.Remaining))
		for _, f := range r.Remaining {
			fmt.Fprintf(w, "  left: %s %s -> %s\n", f.Service, f.Client, orNone(f.Backend))
		}
	} else if len(r.Stale) > 0 {
		fmt.Fprintln(w, "dry run: nothing deleted (add --apply)")
	}
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(untranslated)"
	}
	return s
}

// applyThroughAgent asks the node's agent for the deletion: it reads the
// objects and the table there and deletes what it finds stale.
func (o *reconcileConntrackOptions) applyThroughAgent(ctx context.Context) error {
	r, err := o.remote()
	if err != nil {
		return err
	}
	res, err := r.ApplyConntrack(ctx, o.node)
	if err != nil {
		return err
	}
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(res.Stderr), "error: "))
	if strings.TrimSpace(res.Stdout) == "" {
		return &exitCodeError{code: exitError, err: fmt.Errorf("node %s: the agent's reconcile conntrack: %s", o.node, msg)}
	}
	var rep reconcile.ConntrackReport
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		return fmt.Errorf("node %s: the agent's answer: %w", o.node, err)
	}
	if err := o.print(&rep, func(wide bool) { renderRepair(o.Out, &rep) }); err != nil {
		return err
	}
	if res.ExitCode != exitOK {
		if msg == "" {
			return &exitCodeError{code: res.ExitCode}
		}
		return &exitCodeError{code: res.ExitCode, err: errors.New(msg)}
	}
	return nil
}
