package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/reconcile"
	"github.com/svctrace/svctrace/snapshot"
)

func newReconcileRollbackCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := newCommonOptions(streams)
	var lockFile string
	cmd := &cobra.Command{
		Use:   "rollback FILE [--node N]",
		Short: "Put back kube-proxy's rules as a backup of reconcile rules --apply holds them",
		Long: `Put kube-proxy's chains, and its jumps in the built-in chains, back as the
backup FILE holds them, in one iptables-restore --noflush per table, each
committed whole (a table that fails puts the ones before it back as they
were). Other components' rules are left as they are now, but for rules of
theirs that jump to a kube-proxy chain the backup does not hold. It runs on
the node it is on, or with --node N from a workstation, in the node's agent
Pod, where that node's backups are kept.

The backup must be whole (its checksum matches), taken on this node (--node,
else the host name) and in the mode kube-proxy runs in here (its /configz,
else the mode whose objects the kernel holds); a rollback holds the node's
reconcile lock, and is refused while an apply or another rollback runs.

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
			return rollbackHere(cmd.Context(), o, args[0], lockFile)
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVar(&lockFile, "lock-file", reconcile.DefaultLockFile, "The node's reconcile lock")
	_ = cmd.Flags().MarkHidden("lock-file")
	return cmd
}

// rollbackHere puts a backup back on the node svctrace runs on.
func rollbackHere(ctx context.Context, o *commonOptions, file, lockFile string) error {
	b, err := reconcile.LoadBackup(file)
	if err != nil {
		return err
	}
	node := o.node
	if node == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("the node's name: %w; give it with --node", err)
		}
		node = strings.ToLower(host)
	}
	if err := b.CheckTarget(reconcile.RollbackTarget{Node: node}); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	lock, err := reconcile.LockNode(lockFile)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	mode, how := liveMode(ctx, o.proxyMetrics, node)
	t := reconcile.RollbackTarget{Node: node, Mode: mode}
	if err := b.CheckTarget(t); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if how != "" {
		fmt.Fprintf(o.ErrOut, "note: %s\n", how)
	}
	done, err := reconcile.RollbackRules(ctx, b, t)
	for _, f := range done {
		fmt.Fprintf(o.Out, "%s: %s put back\n", familyName(f.Family, f.Backend), wording.Count(len(f.Changes), "change", "changes"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	fmt.Fprintf(o.Out, "node %s: kube-proxy's rules are as of %s\n", b.Node, b.TakenAt.Format(time.RFC3339))
	return nil
}

// liveMode is kube-proxy's mode on this node: its /configz's, else that of
// the plane whose kube-proxy objects the kernel holds, in the order
// svctrace prefers them; "" when neither tells, and how says why.
func liveMode(ctx context.Context, metrics, node string) (mode, how string) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	pc, cerr := inspect.ProxyConfigFromConfigz(cctx, metrics)
	if cerr == nil && pc.Mode != "" {
		return pc.Mode, ""
	}
	rules := inspect.ReadRules(ctx)()
	if rules.Err != nil {
		return "", fmt.Sprintf("kube-proxy's mode is not known (its /configz: %v; the kernel: %v): the backup's mode is taken", cerr, rules.Err)
	}
	ns := &snapshot.NodeState{Name: node, Dumps: rules.Dumps}
	for _, l := range plugins.Loaders() {
		for _, family := range []string{"IPv4", "IPv6"} {
			if pl, err := l.Load(ns, family); err == nil && pl != nil && pl.HasKubeProxy() {
				return l.Mode(), ""
			}
		}
	}
	return "", "kube-proxy's mode is not known (no answer from its /configz, and the kernel holds no mode's objects): the backup's mode is taken"
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
