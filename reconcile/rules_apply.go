package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	// LockFile is the node-wide lock taken for the write ("":
	// DefaultLockFile); another apply or rollback holding it is refused.
	LockFile string
	// KeepBackups is how many backups of the node to keep in the backup's
	// directory, the new one included (0: DefaultKeepBackups; below 0:
	// all).
	KeepBackups int
	// CheckKubeProxy, when set, is asked again under the lock, right
	// before anything is written: an error refuses the write (see
	// KubeProxyCheck).
	CheckKubeProxy func(ctx context.Context) error
	// Force says --force skipped kube-proxy's check, and User who gave
	// it ("": not known): the apply says so in its notes and on Log.
	Force bool
	User  string
	// Log, when set, is told what the apply must not do unsaid (--force).
	Log io.Writer
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
	// Notes say what the apply did beyond the plan: --force, the old
	// backups removed.
	Notes []string `json:"notes,omitempty"`
}

// ApplyRules writes a plan to the kernel of the node it runs on: a backup
// first, then each family's changes in one iptables-restore, worked out
// again against the kernel as it is at that moment; then it reads the
// node again and runs the plan's drift check. If the kernel does not hold
// what was written, or a finding the plan fixes is still there, the
// backup's state is put back and the apply fails saying why. It holds the
// node's lock (LockNode) throughout, and asks about kube-proxy again under
// it; if that, the lock or the backup fails, nothing is written and the
// result is nil.
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
	// Until the first kernel write, a failure leaves no result: nothing
	// was written, and nothing is to be read again.
	w, err := writer(p.Mode)
	if err != nil {
		return nil, err
	}
	lock, err := LockNode(o.LockFile)
	if err != nil {
		return nil, fmt.Errorf("nothing written: %w", err)
	}
	defer lock.Unlock()
	if err := o.recheck(ctx, res); err != nil {
		return nil, fmt.Errorf("nothing written: %w", err)
	}
	backup, err := TakeBackup(ctx, p, o.Backup, o.Now)
	if err != nil {
		return nil, fmt.Errorf("nothing written: %w", err)
	}
	res.Backup = o.Backup
	res.Notes = append(res.Notes, rotateBackups(o.Backup, p.Node, o.KeepBackups)...)
	hook(StageAfterBackup)
	for _, f := range p.Families {
		if len(f.Changes) == 0 {
			continue
		}
		f.plan.Backup = o.Backup
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
	t := RollbackTarget{Node: b.Node, Mode: b.Mode, Exact: true}
	if _, err := RollbackRules(context.WithoutCancel(ctx), b, t); err != nil {
		return fmt.Errorf("%s; rolling back to %s failed too: %w", reason, res.Backup, err)
	}
	return errors.New(reason + "; rolled back to " + res.Backup)
}

// recheck asks about kube-proxy again, under the lock, before anything
// is written; or says --force skipped that.
func (o ApplyOptions) recheck(ctx context.Context, res *RulesApply) error {
	if o.Force {
		who := o.User
		if who == "" {
			who = "a caller whose name is not known"
		}
		note := "--force given: kube-proxy's check was skipped by " + who
		res.Notes = append(res.Notes, note)
		if o.Log != nil {
			fmt.Fprintln(o.Log, note)
		}
		return nil
	}
	if o.CheckKubeProxy == nil {
		return nil
	}
	return o.CheckKubeProxy(ctx)
}

// KubeProxyRecentWindow is how recent a kube-proxy's last sync may be for
// an apply to refuse to write under it: kube-proxy writes every Service
// again at least this often, and at once after any change.
const KubeProxyRecentWindow = time.Hour

// CheckKubeProxy refuses an apply while a kube-proxy runs there and has
// synced recently: it would write its own rules over the repair (or the
// repair over its). err is the answer of its metrics endpoint at addr, nil
// when it answered. It fails closed: only a refused connection (nothing
// listens there: kube-proxy is down, the case a repair is for) lets an
// apply go on without an answer; a timeout, an HTTP error or text that is
// not metrics refuses it, saying what could not be read.
func CheckKubeProxy(addr string, s inspect.KubeProxySync, err error, now time.Time) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kube-proxy's state could not be read (%w): whether it runs and would write over the repair is not known, so nothing is written; check that it is stopped, then give --force", err)
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

// KubeProxyCheck is ApplyOptions.CheckKubeProxy for the kube-proxy
// serving its metrics at addr: CheckKubeProxy of each family's syncs.
func KubeProxyCheck(addr string, families []string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, f := range families {
			s, err := inspect.ReadKubeProxySync(ctx, addr, f)
			if err := CheckKubeProxy(addr, s, err, time.Now()); err != nil {
				return err
			}
		}
		return nil
	}
}

// rotateBackups removes the node's oldest backups (named BackupName) in
// the directory of the one just written, keeping keep of them (0:
// DefaultKeepBackups; below 0: all). What it cannot remove it says.
func rotateBackups(written, node string, keep int) []string {
	if keep == 0 {
		keep = DefaultKeepBackups
	}
	if keep < 0 {
		return nil
	}
	dir := filepath.Dir(written)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("old backups of %s not rotated: %v", dir, err)}
	}
	prefix := "rules-" + node + "-"
	var names []string
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), prefix)
		stamp, yaml := strings.CutSuffix(stamp, ".yaml")
		if _, err := time.Parse("20060102T150405Z", stamp); ok && yaml && err == nil && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	// The names sort by time, oldest first.
	slices.Sort(names)
	var notes []string
	for len(names) > keep {
		p := filepath.Join(dir, names[0])
		names = names[1:]
		if p == written {
			continue
		}
		if err := os.Remove(p); err != nil {
			notes = append(notes, fmt.Sprintf("old backup %s not removed: %v", p, err))
			continue
		}
		notes = append(notes, "old backup removed: "+p)
	}
	return notes
}
