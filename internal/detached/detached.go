// Package detached runs a kernel write by an external program (a restore
// tool, nft -f, svctrace's own ipvs writer) so that, once started, it ends
// as a whole even if svctrace is stopped: a write cut halfway would leave
// the kernel with part of the new state.
//
// Three things make that hold. The program's input is in a file before
// it starts, so it reads nothing from svctrace. It runs in a process group
// of its own and is not tied to the caller's context, so neither a
// terminal's interrupt nor a cancelled context stops it. Its output goes
// to a file, not a pipe, since a pipe whose reader is gone would kill it
// at its first line.
package detached

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/svctrace/svctrace/internal/procgroup"
)

// Write is one write by an external program.
type Write struct {
	// Input is what the program reads. It is put in a temporary file,
	// named after Pattern as os.CreateTemp names it, before the program
	// starts.
	Input   []byte
	Pattern string
	// Stdin gives the input file as the program's standard input. Its
	// name is then removed as soon as the program runs; otherwise Command
	// names the file and it is removed once the program ends.
	Stdin bool
	// Command is the program, given the input file's name. Run sets its
	// standard streams and its process group.
	Command func(file string) *exec.Cmd
	// InputError, StartError and RunError begin the errors of writing the
	// input, of starting the program, and of the program failing (what it
	// printed follows), so that each caller keeps its own wording.
	InputError, StartError, RunError string
}

// Run makes the write. The context counts only until the program starts:
// from then on Run waits for its end. started, if set, is called once the
// program runs, so a caller knows the kernel may have changed.
func (w Write) Run(ctx context.Context, started func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := inputFile(w.Pattern, w.Input)
	if err != nil {
		return fmt.Errorf("%s: %w", w.InputError, err)
	}
	defer os.Remove(name)
	cmd := w.Command(name)
	if w.Stdin {
		in, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("%s: %w", w.InputError, err)
		}
		defer in.Close()
		cmd.Stdin = in
	}
	out, err := os.CreateTemp("", "svctrace-detached-*.log")
	if err != nil {
		return fmt.Errorf("%s: %w", w.StartError, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	procgroup.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", w.StartError, err)
	}
	if w.Stdin {
		// The program holds the file open: its name is no longer needed.
		os.Remove(name)
	}
	if started != nil {
		started()
	}
	if err := cmd.Wait(); err != nil {
		text, _ := os.ReadFile(out.Name())
		return fmt.Errorf("%s: %w: %s", w.RunError, err, strings.TrimSpace(string(text)))
	}
	return nil
}

// inputFile writes the input to a new temporary file, closed, and returns
// its name; nothing is left behind when that fails.
func inputFile(pattern string, input []byte) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(input)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
