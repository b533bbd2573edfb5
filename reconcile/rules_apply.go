package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/snapshot"
)

// Apply stages, for ApplyOptions.Hook.
const (
	StageAfterBackup = "after-backup"
	StageDuringWrite = "during-write"
)

// ApplyOptions steer an apply.
type ApplyOptions struct {
	// Backup is the path of the backup to write first.
	Backup string
	// Reread reads the node again, kernel and API objects, for the
	// check after the write.
	Reread func(ctx context.Context) (*snapshot.Snapshot, error)
	// Options are the plan's, to plan again on what Reread gives.
	Options RulesOptions
	// Hook, when set, is called at each stage of the write (tests stop
	// svctrace there).
	Hook func(stage string)
	Now  time.Time
}

// RulesApply is what an apply did.
type RulesApply struct {
	Backup  string                  `json:"backup,omitempty"`
	Written []*dataplane.RepairPlan `json:"written,omitempty"`
	// Remaining are the drift findings read after the write.
	Remaining []behavior.Finding `json:"remaining,omitempty"`
	// RolledBack says the write was undone, and Reason why.
	RolledBack bool   `json:"rolledBack,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// ApplyRules writes a plan to the kernel of the node it runs on: a backup
// first, then each family's changes in one iptables-restore, worked out
// again against the kernel as it is at that moment; then it reads the
// node again and runs the plan's drift check. If the kernel does not hold
// what was written, or a finding the plan fixes is still there, the
// backup's state is put back and the apply fails saying why.
func ApplyRules(ctx context.Context, p *RulesPlan, o ApplyOptions) (*RulesApply, error) {
	res := &RulesApply{}
	if p.Changes() == 0 {
		return res, nil
	}
	hook := func(stage string) {
		if o.Hook != nil {
			o.Hook(stage)
		}
	}
	w, err := writer(p.Mode)
	if err != nil {
		return res, err
	}
	backup, err := TakeBackup(ctx, p, o.Backup, o.Now)
	if err != nil {
		return res, err
	}
	res.Backup = o.Backup
	hook(StageAfterBackup)
	for _, f := range p.Families {
		if len(f.Changes) == 0 {
			continue
		}
		written, err := w.Write(ctx, f.plan, func() { hook(StageDuringWrite) })
		if written != nil {
			res.Written = append(res.Written, written)
		}
		if err != nil {
			return res, rollBack(ctx, res, backup, fmt.Sprintf("writing %s: %v", f.Family, err))
		}
	}
	if o.Reread == nil {
		return res, nil
	}
	s, err := o.Reread(ctx)
	if err != nil {
		return res, rollBack(ctx, res, backup, fmt.Sprintf("reading the node again: %v", err))
	}
	after, err := PlanRules(s, o.Options)
	if err != nil {
		return res, rollBack(ctx, res, backup, fmt.Sprintf("checking the node again: %v", err))
	}
	res.Remaining = after.Findings
	var fixed []string
	for _, f := range p.Families {
		for _, c := range f.Changes {
			fixed = append(fixed, c.Fixes...)
		}
	}
	for _, f := range after.Findings {
		if d := describeFinding(f); slices.Contains(fixed, d) {
			return res, rollBack(ctx, res, backup, "a finding the repair fixes is still there: "+d)
		}
	}
	return res, nil
}

// rollBack puts the backup's state back after a failed write.
func rollBack(ctx context.Context, res *RulesApply, b *RulesBackup, reason string) error {
	res.RolledBack, res.Reason = true, reason
	if _, err := RollbackRules(context.WithoutCancel(ctx), b); err != nil {
		return fmt.Errorf("%s; rolling back to %s failed too: %w", reason, res.Backup, err)
	}
	return errors.New(reason + "; rolled back to " + res.Backup)
}

// KubeProxyRecentWindow is how recent a kube-proxy's last sync may be for
// an apply to refuse to write under it: kube-proxy writes every Service
// again at least this often, and at once after any change.
const KubeProxyRecentWindow = time.Hour

// CheckKubeProxy refuses an apply while a kube-proxy runs there and has
// synced recently: it would write its own rules over the repair (or the
// repair over its). err is the answer of its metrics endpoint, nil when it
// answered.
func CheckKubeProxy(addr string, s inspect.KubeProxySync, err error, now time.Time) error {
	if err != nil {
		return nil
	}
	who := "the kube-proxy at " + addr
	if s.Version != "" {
		who = "kube-proxy " + s.Version + " at " + addr
	}
	if s.LastSync.IsZero() {
		return fmt.Errorf("%s is running and has not synced its rules yet: stop it before a repair, or give --force", who)
	}
	if age := now.Sub(s.LastSync); age < KubeProxyRecentWindow {
		return fmt.Errorf("%s is running and synced its rules %s ago (%s): it would write over the repair; stop it first, or give --force", who, age.Round(time.Second), s.LastSync.UTC().Format(time.RFC3339))
	}
	return nil
}
