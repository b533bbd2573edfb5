package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/wording"
	"github.com/svctrace/svctrace/nodeapi"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/reconcile"
	"github.com/svctrace/svctrace/snapshot"
)

// stopAtEnv names a stage of --apply at which svctrace kills itself: the
// lab's proof that a stop there leaves the kernel whole.
const stopAtEnv = "SVCTRACE_RECONCILE_STOP_AT"

type reconcileRulesOptions struct {
	*commonOptions
	apply, force bool
	service      string
	backend      string
	backup       string
	keepBackups  int
	// requestedBy is who asked for the apply: the agent passes its
	// authenticated caller; on the node it is the login user.
	requestedBy string
	lockFile    string
}

func newReconcileRulesCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &reconcileRulesOptions{commonOptions: newCommonOptions(streams)}
	cmd := &cobra.Command{
		Use:   "rules --node N [--service NS/NAME] [--apply]",
		Short: "Render the rules kube-proxy would program on a node, show what differs, and write them",
		Long: `Render the complete state kube-proxy would program on the node in its mode
(iptables, nftables or ipvs) for the Services and EndpointSlices of the API, in
the layout of the kube-proxy version running there (iptables mode v1.30 to
v1.37, nftables mode v1.31 to v1.37, ipvs mode v1.30 to v1.37), compare it
with kube-proxy's part of the kernel, and print the difference: each chain,
virtual server or ipset to create, rewrite or delete, each rule, real server,
set element or address to add or remove, and the drift findings each change
fixes. --service limits it to one Service.

With --apply, on the node (--local) or through the node's agent: back the
node's state up to a file, write the changes (iptables-restore --noflush
naming only kube-proxy's chains and its jumps in the built-in chains, one per
IP family; one nft transaction on kube-proxy's table; in ipvs mode, the IPVS
table, kube-proxy's ipsets and kube-ipvs0's addresses over netlink, in a
process of its own that a stopped svctrace does not cut short, then the mode's
iptables rules; no other component's rule or set is touched), read the node
again and run drift. If the kernel
does not hold what was written, or a finding the plan fixes is still there, the
backup is put back. A running kube-proxy that synced within the hour would
write over the repair: --apply refuses then, unless --force. 'reconcile
rollback FILE' puts a backup back. --apply renders from the live API objects
only: objects from a file (--objects) are for a dry run.

Exit codes: 0 nothing to change (or all of it written and no drift left), 1
changes listed (dry run) or drift left after --apply, 2 error (a failed write
is rolled back).`,
		Example: `  kubectl svctrace reconcile rules --snapshot node1.snapshot.yaml --node node1
  kubectl svctrace reconcile rules --local --node "$(hostname)" --service default/web
  kubectl svctrace reconcile rules --local --node "$(hostname)" --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.apply && o.objectsFile != "" {
				return errors.New("--apply renders kube-proxy's rules from the live API objects only: not with --objects FILE (a dry run may read them from a file)")
			}
			if err := o.completeApply(o.apply, true); err != nil {
				return err
			}
			if o.service != "" && !strings.Contains(o.service, "/") {
				o.service = o.namespace + "/" + o.service
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd, true)
	f := cmd.Flags()
	f.BoolVar(&o.apply, "apply", false, "Write the changes (default: only list them)")
	f.BoolVar(&o.force, "force", false, "With --apply: write even while a kube-proxy runs on the node and syncs")
	f.StringVar(&o.service, "service", "", "Only this Service's chains and rules ([NS/]NAME)")
	f.StringVar(&o.backend, "iptables-backend", "", "The iptables backend to write, "+strings.Join(plugins.Backends(), " or ")+" (default: the one holding kube-proxy's chains)")
	f.StringVar(&o.backup, "backup", "", "With --apply: the backup file to write (default: "+reconcile.DefaultBackupDir+"/rules-NODE-TIME.yaml)")
	f.IntVar(&o.keepBackups, "keep-backups", reconcile.DefaultKeepBackups, "With --apply: how many backups of the node to keep in the backup's directory, the new one included (-1: all)")
	f.StringVar(&o.requestedBy, "requested-by", "", "Who asked for the apply, for the log (the agent passes its caller)")
	f.StringVar(&o.lockFile, "lock-file", reconcile.DefaultLockFile, "The node's reconcile lock")
	_ = f.MarkHidden("requested-by")
	_ = f.MarkHidden("lock-file")
	return cmd
}

func (o *reconcileRulesOptions) options() reconcile.RulesOptions {
	return reconcile.RulesOptions{Node: o.node, Service: o.service, KubeProxyVersion: o.kubeProxyVersion, Backend: o.backend}
}

func (o *reconcileRulesOptions) run(ctx context.Context) error {
	if err := plugins.CheckBackend(o.backend); err != nil {
		return fmt.Errorf("--iptables-backend %w", err)
	}
	if o.apply && !o.local {
		return o.applyThroughAgent(ctx)
	}
	s, err := o.snapshot(ctx)
	if err != nil {
		return err
	}
	if err := o.pickNode(s); err != nil {
		return err
	}
	p, err := reconcile.PlanRules(s, o.options())
	if err != nil {
		return err
	}
	var applyErr error
	if o.apply && p.Changes() > 0 {
		if applyErr = o.write(ctx, p); applyErr != nil && p.Apply == nil {
			p.Refused = true
		}
	}
	if err := o.print(p, func(wide bool) { renderRulesPlan(o.Out, p, wide) }); err != nil {
		return err
	}
	switch {
	case applyErr != nil:
		return &exitCodeError{code: exitError, err: applyErr}
	case o.apply && p.Apply != nil && len(p.Apply.Remaining) > 0:
		return &exitCodeError{code: exitDrift}
	case !o.apply && p.Changes() > 0:
		return &exitCodeError{code: exitDrift}
	}
	return nil
}

// write applies the plan on this node, unless a kube-proxy would fight
// it: kube-proxy is asked before the plan is shown, and again under the
// node's lock, right before anything is written.
func (o *reconcileRulesOptions) write(ctx context.Context, p *reconcile.RulesPlan) error {
	families := make([]string, 0, len(p.Families))
	for _, f := range p.Families {
		families = append(families, f.Family)
	}
	check := reconcile.KubeProxyCheck(o.proxyMetrics, families)
	if !o.force {
		if err := check(ctx); err != nil {
			return err
		}
	}
	now := time.Now()
	backup := o.backup
	if backup == "" {
		backup = filepath.Join(reconcile.DefaultBackupDir, reconcile.BackupName(o.node, now))
	}
	stopAt := os.Getenv(stopAtEnv)
	res, err := reconcile.ApplyRules(ctx, p, reconcile.ApplyOptions{
		Backup: backup, Options: o.options(), Now: now,
		Reread: func(ctx context.Context) (*snapshot.Snapshot, error) { return o.snapshot(ctx) },
		Hook: func(stage string) {
			if stage == stopAt {
				fmt.Fprintf(o.ErrOut, "%s=%s: stopping here\n", stopAtEnv, stage)
				if self, err := os.FindProcess(os.Getpid()); err == nil {
					_ = self.Kill()
				}
			}
		},
		LockFile: o.lockFile, KeepBackups: o.keepBackups,
		CheckKubeProxy: check, Force: o.force, User: requester(o.requestedBy), Log: o.ErrOut,
	})
	p.Apply = res
	return err
}

// requester is who asked for an apply: the caller the agent names, or
// the login user on the node (the one sudo was run by, where it was).
func requester(given string) string {
	if given != "" {
		return "user " + wording.Printable(given) + " (through the node's agent)"
	}
	if u := os.Getenv("SUDO_USER"); u != "" {
		return "local user " + wording.Printable(u) + " (through sudo)"
	}
	if u, err := user.Current(); err == nil {
		return "local user " + wording.Printable(u.Username)
	}
	return ""
}

// applyThroughAgent asks the node's agent, through its API, for the
// apply: the agent reads the API objects and the kernel there, keeps the
// backup on the node, and runs it only for a caller the API server lets
// repair the node (the svctrace-repair role).
func (o *reconcileRulesOptions) applyThroughAgent(ctx context.Context) error {
	r, err := o.remote()
	if err != nil {
		return err
	}
	res, err := r.ApplyRules(ctx, o.node, nodeapi.RulesRequest{Service: o.service, KubeProxyVersion: o.kubeProxyVersion,
		IPTablesBackend: o.backend, Backup: o.backup, Force: o.force})
	if err != nil {
		return err
	}
	stdout, stderr, code := res.Stdout, res.Stderr, res.ExitCode
	if strings.TrimSpace(stdout) == "" {
		return &exitCodeError{code: exitError, err: fmt.Errorf("node %s: the agent's reconcile rules: %s", o.node, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), "error: ")))}
	}
	p, err := agentRulesPlan(stdout, code)
	if err != nil {
		return fmt.Errorf("node %s: the agent's answer: %w", o.node, err)
	}
	if err := o.print(p, func(wide bool) { renderRulesPlan(o.Out, p, wide) }); err != nil {
		return err
	}
	if code != exitOK {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), "error: "))
		if msg == "" {
			return &exitCodeError{code: code}
		}
		return &exitCodeError{code: code, err: errors.New(msg)}
	}
	return nil
}

// agentRulesPlan reads the plan the agent's reconcile rules --apply
// printed, which ended with code: an apply that failed before it wrote
// anything was refused, whatever the plan says, never a dry run.
func agentRulesPlan(stdout string, code int) (*reconcile.RulesPlan, error) {
	var p reconcile.RulesPlan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		return nil, err
	}
	if code != exitOK && p.Apply == nil {
		p.Refused = true
	}
	return &p, nil
}

func renderRulesPlan(w io.Writer, p *reconcile.RulesPlan, wide bool) {
	scope := ""
	if p.Service != "" {
		scope = ", Service " + p.Service
	}
	fmt.Fprintf(w, "node %s: kube-proxy %s mode, layout of %s (from %s)%s\n", p.Node, p.Mode, p.KubeProxyVersion, p.VersionSource, scope)
	for _, f := range p.Families {
		fmt.Fprintf(w, "%s: %s\n", familyName(f.Family, f.Backend), wording.Count(len(f.Changes), "change", "changes"))
		for _, c := range f.Changes {
			svc := ""
			if c.Service != "" {
				svc = "  (" + c.Service + ")"
			}
			fmt.Fprintf(w, "  %s %s %s%s\n", c.Op, c.Table, c.Object, svc)
			for _, line := range changeLines(c.Change.Op, c.Add, c.Remove) {
				fmt.Fprintf(w, "      %s\n", line)
			}
			for _, fx := range c.Fixes {
				fmt.Fprintf(w, "    fixes %s\n", fx)
			}
		}
		if wide && f.Payload != "" {
			fmt.Fprintf(w, "  %s:\n", payloadTitle(p.Mode))
			for _, line := range strings.Split(strings.TrimSuffix(f.Payload, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	switch {
	case p.Apply != nil:
		renderApply(w, p.Apply)
	case p.Refused:
		fmt.Fprintln(w, "apply refused: nothing written (the error says why)")
	case p.Changes() > 0:
		fmt.Fprintln(w, "dry run: nothing written (add --apply on the node)")
	}
}

// payloadTitle says what a mode's payload is, as its plane names it.
func payloadTitle(mode string) string {
	if n, ok := plugins.ForMode(mode).(dataplane.PayloadNamer); ok {
		return n.PayloadForm()
	}
	return "the writes of " + mode + " mode"
}

// familyName names a family's part of a plan, with the backend where the
// plane has several.
func familyName(family, backend string) string {
	if backend == "" {
		return family
	}
	return family + " (" + backend + " backend)"
}

// changeLines shows a change's rules: + for a rule written, - for one
// removed; a rewrite shows only the rules that differ.
func changeLines(op string, add, remove []string) []string {
	var out []string
	if op == "rewrite" {
		for _, x := range remove {
			if !slices.Contains(add, x) {
				out = append(out, "- "+x)
			}
		}
		for _, x := range add {
			if !slices.Contains(remove, x) {
				out = append(out, "+ "+x)
			}
		}
		if len(out) == 0 {
			out = append(out, "(the same rules in another order)")
		}
		return out
	}
	for _, x := range remove {
		out = append(out, "- "+x)
	}
	for _, x := range add {
		out = append(out, "+ "+x)
	}
	return out
}

func renderApply(w io.Writer, a *reconcile.RulesApply) {
	if a.Backup != "" {
		fmt.Fprintf(w, "backup: %s\n", a.Backup)
	}
	for _, f := range a.Written {
		fmt.Fprintf(w, "wrote %s: %s\n", familyName(f.Family, f.Backend), wording.Count(len(f.Changes), "change", "changes"))
	}
	if a.RolledBack {
		fmt.Fprintf(w, "rolled back: %s\n", a.Reason)
		return
	}
	if len(a.Remaining) == 0 {
		fmt.Fprintln(w, "read again: no drift")
		return
	}
	fmt.Fprintf(w, "read again: %s left, which the rules do not fix:\n", wording.Count(len(a.Remaining), "finding", "findings"))
	for _, f := range a.Remaining {
		fmt.Fprintf(w, "  %s %s: %s\n", f.Type, f.Service, f.Message)
	}
}
