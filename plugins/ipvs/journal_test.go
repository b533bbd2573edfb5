package ipvs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/dataplane"
)

// journalAt writes a journal of IPv4 in dir, as a write leaves it.
func journalAt(t *testing.T, dir string, e journalEntry) string {
	t.Helper()
	e.Family, e.Started = "IPv4", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if e.Kind == "" {
		e.Kind = journalApply
	}
	path := journalPath(dir, "IPv4")
	if err := writeJournal(path, e); err != nil {
		t.Fatal(err)
	}
	return path
}

// backupErr is a backup's refusal for a family the plan leaves alone
// (which reads nothing from the kernel).
func backupErr(dir string) error {
	_, err := Loader{StateDir: dir}.Backup(context.Background(), &dataplane.RepairPlan{Family: "IPv4"})
	return err
}

// TestJournalRefusesUnfinished: a journal of a write whose end nobody
// saw (its writer killed, or stopped at an error nobody rolled back)
// makes the next apply refuse before its backup, saying what to do; one
// its writer recorded finished is removed and lets the apply go on.
func TestJournalRefusesUnfinished(t *testing.T) {
	dir := t.TempDir()
	if err := backupErr(dir); err != nil {
		t.Fatalf("no journal: %v", err)
	}
	for _, c := range []struct {
		name string
		e    journalEntry
		want []string
	}{
		{"killed", journalEntry{Writer: 999999999}, []string{"IPv4 apply write started at 2026-11-28T10:00:00Z did not finish", "killed", "kubectl svctrace reconcile rollback FILE", "ipvs-write-IPv4.json"}},
		{"never started", journalEntry{}, []string{"did not finish", "reconcile rollback"}},
		{"killed, its backup named", journalEntry{Writer: 999999999, Backup: "/var/lib/svctrace/backups/rules-node1-x.yaml"},
			[]string{"`kubectl svctrace reconcile rollback /var/lib/svctrace/backups/rules-node1-x.yaml`"}},
		{"failed", journalEntry{Writer: 999999999, Failed: "adding IPVS virtual server TCP 10.96.0.10:80: no such file"}, []string{"stopped at an error", "TCP 10.96.0.10:80"}},
		{"a rollback", journalEntry{Kind: journalRollback}, []string{"IPv4 rollback write", "run that rollback again"}},
	} {
		path := journalAt(t, dir, c.e)
		err := backupErr(dir)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want %q", c.name, err, w)
			}
		}
		if _, serr := os.Stat(path); serr != nil {
			t.Errorf("%s: the refusal removed the journal: %v", c.name, serr)
		}
		// A rollback is what clears it.
		if err := unfinished(context.Background(), dir, true, 0); err != nil {
			t.Errorf("%s: a rollback is refused: %v", c.name, err)
		}
	}
	path := journalAt(t, dir, journalEntry{Writer: 999999999, Finished: true})
	if err := backupErr(dir); err != nil {
		t.Fatalf("a finished write: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a finished write's journal is still there: %v", err)
	}
}

// TestJournalWaitsForWriter: while the writer a journal names still
// runs (svctrace was stopped, its writer was not), an apply and a
// rollback wait for it, and refuse if it does not end; one that ends
// meanwhile is judged by what it recorded. A process that merely reuses
// its pid is no writer.
func TestJournalWaitsForWriter(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	writer := func(secs string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sh", "-c", "sleep "+secs, dataplane.DetachedWriteCommand, "ipvs")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	long := writer("30")
	journalAt(t, dir, journalEntry{Writer: long.Process.Pid})
	for _, rollback := range []bool{false, true} {
		if err := unfinished(ctx, dir, rollback, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still being written by pid") {
			t.Errorf("rollback %v: error %v", rollback, err)
		}
	}
	short := writer("0.3")
	path := journalAt(t, dir, journalEntry{Writer: short.Process.Pid})
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = updateJournal(path, func(e *journalEntry) { e.Finished = true })
	}()
	if err := unfinished(ctx, dir, false, 10*time.Second); err != nil {
		t.Errorf("a writer that ended finished: %v", err)
	}
	journalAt(t, dir, journalEntry{Writer: os.Getpid(), Finished: true})
	if err := unfinished(ctx, dir, false, 0); err != nil {
		t.Errorf("the test's own pid taken for a writer: %v", err)
	}
}
