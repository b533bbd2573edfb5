package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// RulesBackup is a node's kube-proxy state before a repair: per family,
// the plane's whole state as read from the kernel, of which a rollback
// restores kube-proxy's part.
type RulesBackup struct {
	APIVersion string                 `json:"apiVersion"`
	Kind       string                 `json:"kind"`
	Node       string                 `json:"node"`
	TakenAt    time.Time              `json:"takenAt"`
	Families   []dataplane.BackupPart `json:"families"`
}

// DefaultBackupDir is where --apply keeps its backups on the node unless
// told otherwise.
const DefaultBackupDir = "/var/lib/svctrace/backups"

// BackupName is a backup's file name for a node and time.
func BackupName(node string, at time.Time) string {
	return fmt.Sprintf("rules-%s-%s.yaml", node, at.UTC().Format("20060102T150405Z"))
}

// TakeBackup reads from the kernel each family's state the plan would
// change and writes it to path, synced to disk before it returns.
func TakeBackup(ctx context.Context, p *RulesPlan, path string, now time.Time) (*RulesBackup, error) {
	b := &RulesBackup{APIVersion: snapshot.APIVersion, Kind: "RulesBackup", Node: p.Node, TakenAt: now.UTC()}
	for _, f := range p.Families {
		w, err := writer(p.Mode)
		if err != nil {
			return nil, err
		}
		part, err := w.Backup(ctx, f.plan)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		b.Families = append(b.Families, part)
	}
	data, err := yaml.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	return b, nil
}

// LoadBackup reads a backup file.
func LoadBackup(path string) (*RulesBackup, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b RulesBackup
	if err := yaml.UnmarshalStrict(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if b.Kind != "RulesBackup" {
		return nil, fmt.Errorf("%s: kind %q, not a RulesBackup written by reconcile rules --apply", path, b.Kind)
	}
	if len(b.Families) == 0 {
		return nil, fmt.Errorf("%s: the backup holds no family", path)
	}
	return &b, nil
}

// RollbackRules puts kube-proxy's part of each family back as the backup
// holds it, and checks the kernel then holds it. Other components' state
// is left as it is now. It returns what each family's rollback changed.
func RollbackRules(ctx context.Context, b *RulesBackup) ([]*dataplane.RepairPlan, error) {
	var done []*dataplane.RepairPlan
	var errs []error
	for _, part := range b.Families {
		r, err := writer(part.Mode)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p, err := r.Restore(ctx, part)
		if p != nil {
			done = append(done, p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", part.Family, err))
		}
	}
	return done, errors.Join(errs...)
}
