package ipvs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svctrace/svctrace/dataplane"
)

// DefaultStateDir is where a write keeps its journal: the node's state
// directory, where reconcile keeps its lock and its backups, and which the
// agent's Pod shares with the node (deploy/agent.yaml). A journal there
// outlives a writer killed with its container's cgroup (the OOM killer
// takes the whole cgroup, the detached writer with it).
const DefaultStateDir = "/var/lib/svctrace"

// Kinds of write a journal records.
const (
	journalApply    = "apply"
	journalRollback = "rollback"
)

// journalEntry is what a write's journal says. Its file is there from
// before the writer starts until the write has been read back (an apply)
// or put back (a rollback): one left behind is a write whose end nobody
// saw, and the kernel may hold part of it.
type journalEntry struct {
	Family  string    `json:"family"`
	Kind    string    `json:"kind"`
	Started time.Time `json:"started"`
	// Writer is the writing process, as it records itself when it starts.
	Writer int `json:"writer,omitempty"`
	// Finished: the writer made every change it worked out (the read-back
	// of the apply that started it may not have run).
	Finished bool `json:"finished,omitempty"`
	// Failed is the error the writer stopped at.
	Failed string `json:"failed,omitempty"`
	// Backup is the file the apply backed the node up to, when it said.
	Backup string `json:"backup,omitempty"`
}

// journalPath is the journal of a family's writes in a state directory
// ("": DefaultStateDir).
func journalPath(dir, family string) string {
	if dir == "" {
		dir = DefaultStateDir
	}
	return filepath.Join(dir, "ipvs-write-"+family+".json")
}

// readJournal reads a journal; nil when there is none.
func readJournal(path string) (*journalEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ipvs write journal: %w", err)
	}
	var e journalEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("the ipvs write journal %s: %w", path, err)
	}
	return &e, nil
}

// writeJournal replaces a journal whole: a temporary file of its
// directory, synced, renamed over it, and the directory synced.
func writeJournal(path string, e journalEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("the ipvs write journal: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("the ipvs write journal: %w", err)
	}
	f, err := os.CreateTemp(dir, ".ipvs-write-*")
	if err != nil {
		return fmt.Errorf("the ipvs write journal: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing the ipvs write journal %s: %w", path, err)
	}
	return syncDir(dir)
}

// updateJournal changes a journal in place; a missing one is left so.
func updateJournal(path string, change func(*journalEntry)) error {
	e, err := readJournal(path)
	if err != nil || e == nil {
		return err
	}
	change(e)
	return writeJournal(path, *e)
}

// endJournal removes a journal: the write's end was seen.
func endJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the ipvs write journal: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("the ipvs write journal's directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the ipvs write journal's directory: %w", err)
	}
	return nil
}

// writerWait is how long an apply or a rollback waits for a writer a
// journal names that still runs (svctrace was stopped, its writer was
// not) before it refuses.
const writerWait = 30 * time.Second

// unfinished refuses, under the node's lock, while a journal of the state
// directory records a write whose end nobody saw, naming what to do: a
// write its writer finished is no longer in the way, and its journal is
// removed. With rollback, only a writer still running is in the way. A
// writer still running is waited for, up to wait.
func unfinished(ctx context.Context, dir string, rollback bool, wait time.Duration) error {
	if dir == "" {
		dir = DefaultStateDir
	}
	paths, err := filepath.Glob(filepath.Join(dir, "ipvs-write-*.json"))
	if err != nil {
		return fmt.Errorf("the ipvs write journals: %w", err)
	}
	for _, path := range paths {
		e, err := readJournal(path)
		if err != nil {
			return err
		}
		if e != nil && e.Writer > 0 && !waitWriter(ctx, e.Writer, wait) {
			return fmt.Errorf("ipvs mode's %s %s write started at %s is still being written by pid %d: wait for it to end (journal %s)",
				e.Family, e.Kind, e.Started.Format(time.RFC3339), e.Writer, path)
		}
		// Ended meanwhile, the writer recorded how.
		if e, err = readJournal(path); err != nil {
			return err
		}
		switch {
		case e == nil || rollback:
		case e.Finished:
			if err := endJournal(path); err != nil {
				return err
			}
		default:
			return e.refusal(path)
		}
	}
	return nil
}

// waitWriter waits up to wait for a writer to end; false if it still
// runs.
func waitWriter(ctx context.Context, pid int, wait time.Duration) bool {
	end := time.Now().Add(wait)
	for writerRunning(pid) {
		if time.Now().After(end) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// refusal is the error for a write whose end nobody saw.
func (e *journalEntry) refusal(path string) error {
	how := "its process was killed before it ended (stopped with its container's cgroup, by the OOM killer or otherwise)"
	if e.Failed != "" {
		how = "its writer stopped at an error nobody rolled back: " + e.Failed
	}
	what := "put the backup that apply took just before it back with `kubectl svctrace reconcile rollback FILE` (in " +
		filepath.Join(DefaultStateDir, "backups") + " unless --backup named another), then apply again"
	if e.Backup != "" {
		what = "put the backup that apply took just before it back with `kubectl svctrace reconcile rollback " + e.Backup + "`, then apply again"
	}
	if e.Kind == journalRollback {
		what = "run that rollback again (`kubectl svctrace reconcile rollback FILE`)"
	}
	return fmt.Errorf("ipvs mode's %s %s write started at %s did not finish: %s, and the kernel may hold part of it: %s (journal %s)",
		e.Family, e.Kind, e.Started.Format(time.RFC3339), how, what, path)
}

// writerRunning reports whether pid is a writing process of svctrace's
// (not another process that reuses its number).
func writerRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	for i, a := range args {
		if a == dataplane.DetachedWriteCommand && i+1 < len(args) && args[i+1] == "ipvs" {
			return true
		}
	}
	return false
}
