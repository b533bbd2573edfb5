package detached

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// shell is a Write that runs a shell script; the script finds the input
// file's name in $0.
func shell(t *testing.T, script string) (*Write, *string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	file := new(string)
	return &Write{
		Input:   []byte("payload\n"),
		Pattern: "detached-test-*.in",
		Command: func(name string) *exec.Cmd {
			*file = name
			return exec.Command("sh", "-c", script, name)
		},
		InputError: "writing the input", StartError: "starting", RunError: "running",
	}, file
}

func TestRunInput(t *testing.T) {
	for _, stdin := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "got")
		script := `cp "$0" ` + dst
		if stdin {
			script = "cat > " + dst
		}
		w, file := shell(t, script)
		w.Stdin = stdin
		if err := w.Run(context.Background(), nil); err != nil {
			t.Fatalf("stdin %v: %v", stdin, err)
		}
		if got, _ := os.ReadFile(dst); string(got) != "payload\n" {
			t.Errorf("stdin %v: the program read %q, want the input", stdin, got)
		}
		if _, err := os.Stat(*file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stdin %v: the input file %s is left behind (%v)", stdin, *file, err)
		}
	}
}

// A context cancelled once the program runs does not stop it: the write
// ends, and Run reports its end.
func TestRunOutlivesContext(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "done")
	w, _ := shell(t, "sleep 0.3; echo done > "+dst)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	if err := w.Run(ctx, func() { calls++; cancel() }); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("started was called %d times, want once", calls)
	}
	if _, err := os.Stat(dst); err != nil {
		t.Errorf("the program was stopped before its end: %v", err)
	}
}

func TestRunOwnProcessGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process groups are set on Linux only")
	}
	dst := filepath.Join(t.TempDir(), "stat")
	w, _ := shell(t, "cat /proc/self/stat > "+dst)
	if err := w.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	// The process group is the fifth field, after the command's name in
	// parentheses.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	pgid, err := strconv.Atoi(fields[2])
	if err != nil {
		t.Fatalf("%q: %v", stat, err)
	}
	if pgid == syscall.Getpgrp() {
		t.Errorf("the program runs in the test's process group %d", pgid)
	}
}

func TestRunFails(t *testing.T) {
	w, _ := shell(t, "echo boom >&2; exit 3")
	started := false
	err := w.Run(context.Background(), func() { started = true })
	if err == nil || err.Error() != "running: exit status 3: boom" {
		t.Errorf("err = %v, want the program's failure with what it printed", err)
	}
	if !started {
		t.Error("started was not called for a program that ran")
	}
}

func TestRunNotStarted(t *testing.T) {
	w, _ := shell(t, "true")
	w.Command = func(string) *exec.Cmd { return exec.Command(filepath.Join(t.TempDir(), "missing")) }
	started := false
	err := w.Run(context.Background(), func() { started = true })
	if err == nil || !strings.HasPrefix(err.Error(), "starting: ") {
		t.Errorf("err = %v, want a start error", err)
	}
	if started {
		t.Error("started was called for a program that never ran")
	}
}

func TestRunCancelledBefore(t *testing.T) {
	w, _ := shell(t, "true")
	called := false
	w.Command = func(string) *exec.Cmd { called = true; return exec.Command("true") }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if called {
		t.Error("a cancelled write made its command")
	}
}
