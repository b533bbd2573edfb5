package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/snapshot"
)

// RulesBackup is a node's iptables state before a repair: each family's
// whole dump of the backend written, of which a rollback restores
// kube-proxy's part.
type RulesBackup struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Node       string         `json:"node"`
	TakenAt    time.Time      `json:"takenAt"`
	Families   []BackupFamily `json:"families"`
}

// BackupFamily is one family's dump in a backup.
type BackupFamily struct {
	Family  string `json:"family"`
	Backend string `json:"backend"`
	// Text is the save tool's output.
	Text string `json:"text"`
}

// DefaultBackupDir is where --apply keeps its backups on the node unless
// told otherwise.
const DefaultBackupDir = "/var/lib/svctrace/backups"

// BackupName is a backup's file name for a node and time.
func BackupName(node string, at time.Time) string {
	return fmt.Sprintf("rules-%s-%s.yaml", node, at.UTC().Format("20060102T150405Z"))
}

// TakeBackup dumps each family of the plan from the kernel and writes
// them to path, synced to disk before it returns.
func TakeBackup(ctx context.Context, p *RulesPlan, path string, now time.Time) (*RulesBackup, error) {
	b := &RulesBackup{APIVersion: snapshot.APIVersion, Kind: "RulesBackup", Node: p.Node, TakenAt: now.UTC()}
	for _, f := range p.Families {
		text, err := iptables.SaveKernel(ctx, f.Backend, f.Family)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		b.Families = append(b.Families, BackupFamily{Family: f.Family, Backend: f.Backend, Text: text})
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

// Rollback is what a rollback changed, per family.
type Rollback struct {
	Node     string
	Families []FamilyPlan
}

// RollbackRules puts kube-proxy's part of each family back as the backup
// holds it, and checks the kernel then holds it. Other components' rules
// are left as they are now.
func RollbackRules(ctx context.Context, b *RulesBackup) (*Rollback, error) {
	r := &Rollback{Node: b.Node}
	var errs []error
	for _, bf := range b.Families {
		target, err := iptables.ReadLayout(bf.Family, bf.Text)
		if err != nil {
			return r, fmt.Errorf("backup, %s: %w", bf.Family, err)
		}
		fp, err := restoreLayout(ctx, bf.Family, bf.Backend, target, nil, nil)
		r.Families = append(r.Families, fp)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bf.Family, err))
		}
	}
	return r, errors.Join(errs...)
}

// restoreLayout takes kube-proxy's part of a family in the kernel to the
// target layout, then reads it back: what differs then is an error.
func restoreLayout(ctx context.Context, family, backend string, target *iptables.Layout, scope *iptables.Scope, started func()) (FamilyPlan, error) {
	fp := FamilyPlan{Family: family, Backend: backend, target: target}
	current, err := kernelLayout(ctx, family, backend)
	if err != nil {
		return fp, err
	}
	changes := iptables.Diff(current, target, scope)
	for _, c := range changes {
		fp.Changes = append(fp.Changes, PlannedChange{Change: c})
	}
	if len(changes) == 0 {
		return fp, nil
	}
	fp.Payload = iptables.Payload(changes)
	if err := iptables.RestoreKernel(ctx, backend, family, fp.Payload, started); err != nil {
		return fp, err
	}
	after, err := kernelLayout(ctx, family, backend)
	if err != nil {
		return fp, err
	}
	if left := iptables.Diff(after, target, scope); len(left) > 0 {
		return fp, fmt.Errorf("read back, the kernel still differs: %s %s %s", left[0].Op, left[0].Table, left[0].Chain)
	}
	return fp, nil
}

func kernelLayout(ctx context.Context, family, backend string) (*iptables.Layout, error) {
	text, err := iptables.SaveKernel(ctx, backend, family)
	if err != nil {
		return nil, err
	}
	l, err := iptables.ReadLayout(family, text)
	if err != nil {
		return nil, fmt.Errorf("%s %s dump: %w", family, backend, err)
	}
	return l, nil
}
