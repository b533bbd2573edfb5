package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/reconcile"
	"github.com/svctrace/svctrace/wording"
)

func newReconcileRollbackCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := newCommonOptions(streams)
	cmd := &cobra.Command{
		Use:   "rollback FILE [--node N]",
		Short: "Put back kube-proxy's rules as a backup of reconcile rules --apply holds them",
		Long: `Put kube-proxy's chains, and its jumps in the built-in chains, back as the
backup FILE holds them, in one iptables-restore --noflush per IP family. Other
components' rules are left as they are now. It runs on the node it is on, or
with --node N from a workstation, in the node's agent Pod, where that node's
backups are kept.

Exit codes: 0 restored, 2 error.`,
		Example: `  kubectl svctrace reconcile rollback /var/lib/svctrace/backups/rules-node1-20261124T101500Z.yaml
  kubectl svctrace reconcile rollback --node node1 /var/lib/svctrace/backups/rules-node1-20261124T101500Z.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if o.node != "" && !o.local {
				return rollbackThroughAgent(cmd.Context(), o, args[0])
			}
			b, err := reconcile.LoadBackup(args[0])
			if err != nil {
				return err
			}
			done, err := reconcile.RollbackRules(cmd.Context(), b)
			for _, f := range done {
				fmt.Fprintf(streams.Out, "%s: %s put back\n", familyName(f.Family, f.Backend), wording.Count(len(f.Changes), "change", "changes"))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "node %s: kube-proxy's rules are as of %s\n", b.Node, b.TakenAt.Format(time.RFC3339))
			return nil
		},
	}
	o.addFlags(cmd, true)
	return cmd
}

// rollbackThroughAgent asks the node's agent, through its API, for the
// rollback of a backup it keeps.
func rollbackThroughAgent(ctx context.Context, o *commonOptions, file string) error {
	r, err := o.remote()
	if err != nil {
		return err
	}
	res, err := r.RollbackRules(ctx, o.node, file)
	if err != nil {
		return err
	}
	stdout, stderr, code := res.Stdout, res.Stderr, res.ExitCode
	fmt.Fprint(o.Out, stdout)
	if code != exitOK {
		return &exitCodeError{code: code, err: fmt.Errorf("node %s: %s", o.node, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), "error: ")))}
	}
	return nil
}
