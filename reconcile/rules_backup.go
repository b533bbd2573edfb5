package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Node       string `json:"node"`
	// Mode is kube-proxy's mode the backup was taken in: a rollback
	// writes only where kube-proxy runs in it.
	Mode    string    `json:"mode"`
	TakenAt time.Time `json:"takenAt"`
	// Checksum is "sha256:" and the hex SHA-256 of the saved state (every
	// field but itself, see Sum), written with the backup: a file
	// cut short or changed since does not match it. It guards against
	// damage, not against root, who may write the file and its sum.
	Checksum string                 `json:"checksum"`
	Families []dataplane.BackupPart `json:"families"`
}

// DefaultBackupDir is where --apply keeps its backups on the node unless
// told otherwise.
const DefaultBackupDir = "/var/lib/svctrace/backups"

// DefaultKeepBackups is how many backups of a node --apply keeps in its
// backup directory: older ones are removed after a new one is written.
const DefaultKeepBackups = 10

// BackupName is a backup's file name for a node and time.
func BackupName(node string, at time.Time) string {
	return fmt.Sprintf("rules-%s-%s.yaml", node, at.UTC().Format("20060102T150405Z"))
}

// Sum is the checksum of a backup's state: SHA-256 over the JSON of every
// field but Checksum, in the order of the type.
func (b *RulesBackup) Sum() (string, error) {
	c := *b
	c.Checksum = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// TakeBackup reads from the kernel each family's state the plan would
// change and writes it to path, whole or not at all: into a temporary
// file of path's directory, synced, then linked to path (which must not
// exist), and the directory synced. On any error nothing is left at path
// or beside it, and nothing may be written to the kernel.
func TakeBackup(ctx context.Context, p *RulesPlan, path string, now time.Time) (*RulesBackup, error) {
	b := &RulesBackup{APIVersion: snapshot.APIVersion, Kind: "RulesBackup", Node: p.Node, Mode: p.Mode, TakenAt: now.UTC()}
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
	if err := b.Write(path); err != nil {
		return nil, err
	}
	return b, nil
}

// Write writes the backup to path with its checksum, whole or not at all
// (see TakeBackup).
func (b *RulesBackup) Write(path string) error {
	sum, err := b.Sum()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	b.Checksum = sum
	data, err := yaml.Marshal(b)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := writeWhole(path, data); err != nil {
		return fmt.Errorf("backup %s: %w", path, err)
	}
	return nil
}

// writeWhole writes data to path atomically and durably; path must not
// exist. A failure removes the temporary file.
func writeWhole(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%w: a backup is never written over", os.ErrExist)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	// A link, unlike a rename, fails rather than replace a file made at
	// path meanwhile.
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	os.Remove(tmp)
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		os.Remove(path)
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// LoadBackup reads a backup file and checks it is whole: its checksum
// must match its content. A backup without one (written by a svctrace
// older than the checksum) is refused: whether it was cut short cannot be
// told, and a rollback to part of a state would delete the rest.
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
	if b.Checksum == "" {
		return nil, fmt.Errorf("%s: the backup has no checksum (it was written before svctrace checked its backups): whether it is whole cannot be told, and rolling back to part of a state would delete the rest; refused", path)
	}
	sum, err := b.Sum()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if sum != b.Checksum {
		return nil, fmt.Errorf("%s: the checksum does not match the content (%s written, %s read): the file was changed or damaged since it was written; refused", path, b.Checksum, sum)
	}
	if len(b.Families) == 0 {
		return nil, fmt.Errorf("%s: the backup holds no family", path)
	}
	for i, part := range b.Families {
		if part.Mode != b.Mode {
			return nil, fmt.Errorf("%s: families[%d] (%s) is of %s mode, the backup of %s mode", path, i, part.Family, part.Mode, b.Mode)
		}
	}
	return &b, nil
}

// RollbackTarget is the node a rollback writes to, to be held against
// the backup's.
type RollbackTarget struct {
	// Node is the name of the node the rollback runs on.
	Node string
	// Mode is kube-proxy's mode there; "" when it cannot be told (no
	// kube-proxy answers and the kernel holds no mode's objects), and
	// then nothing of another mode is there to clash with the backup's.
	Mode string
	// Exact puts back everything of the backup's families the kernel
	// holds otherwise, not only kube-proxy's part: the rollback after a
	// failed write, which may have touched more than it should.
	Exact bool
}

// CheckTarget refuses a backup taken on another node, or in another mode
// than kube-proxy's there.
func (b *RulesBackup) CheckTarget(t RollbackTarget) error {
	switch {
	case t.Node == "":
		return errors.New("the node the rollback runs on is not known: name it with --node")
	case b.Node != t.Node:
		return fmt.Errorf("the backup was taken on node %s, and this is node %s: a backup is put back only on its own node", b.Node, t.Node)
	case t.Mode != "" && b.Mode != t.Mode:
		return fmt.Errorf("the backup holds kube-proxy's %s mode, and kube-proxy runs in %s mode on node %s: putting it back would write a second mode's state beside the live one", b.Mode, t.Mode, t.Node)
	}
	return nil
}

// RollbackRules puts kube-proxy's part of each family back as the backup
// holds it (with Exact, all of each family's state the backup holds), and
// checks the kernel then holds it. It refuses a backup of another node or
// mode. It returns what each family's rollback changed.
func RollbackRules(ctx context.Context, b *RulesBackup, t RollbackTarget) ([]*dataplane.RepairPlan, error) {
	if err := b.CheckTarget(t); err != nil {
		return nil, err
	}
	var done []*dataplane.RepairPlan
	var errs []error
	for _, part := range b.Families {
		p, err := restorePart(ctx, part, t.Exact)
		if p != nil {
			done = append(done, p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", part.Family, err))
		}
	}
	return done, errors.Join(errs...)
}

// rollbacker is a plane that puts a backup back itself, every object the
// backup holds at once, rather than through Repairer.Restore: exact puts
// back the whole of the family's state the backup holds.
type rollbacker interface {
	Rollback(ctx context.Context, part dataplane.BackupPart, exact bool) (*dataplane.RepairPlan, error)
}

func restorePart(ctx context.Context, part dataplane.BackupPart, exact bool) (*dataplane.RepairPlan, error) {
	w, err := writer(part.Mode)
	if err != nil {
		return nil, err
	}
	if r, ok := w.(rollbacker); ok {
		return r.Rollback(ctx, part, exact)
	}
	return w.Restore(ctx, part)
}
