// Package tmuxtest drives a terminal program in a real terminal, as a user
// would: it runs the program in a pane of a tmux server of its own, types
// keys into it and reads the screen back. For end-to-end tests.
package tmuxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Pane is one program running in an 80×24 tmux pane.
type Pane struct {
	t    testing.TB
	sock string
}

const session = "svctrace"

// Start runs command (a shell command line) in a new pane, 80×24 with
// TERM=xterm-256color and the environment given (NAME=VALUE); the server
// is killed when the test ends. Without tmux the test is skipped, or
// fails under CI=true.
func Start(t testing.TB, command string, env ...string) *Pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux not found in PATH, and CI=true forbids skipping")
		}
		t.Skip("tmux not found in PATH")
	}
	p := &Pane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	args := []string{"new-session", "-d", "-x", "80", "-y", "24", "-s", session, "-e", "TERM=xterm-256color"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	p.run(append(args, command)...)
	// The pane stays once the program ends, so its exit status can be read.
	p.run("set-option", "-t", session, "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *Pane) run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...)
	// The server runs the command with $SHELL -c: the same shell for
	// everyone (a login shell may be fish, or nologin for a system user).
	cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Keys sends each key on its own, a little apart, as typed: tmux key
// names (Enter, Escape, C-c, BSpace, Up, Down) or literal text. An
// Escape waits longer, so the key after it is not read as Alt+key.
func (p *Pane) Keys(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		pause := 150 * time.Millisecond
		switch k {
		case "Escape":
			pause = 700 * time.Millisecond
			fallthrough
		case "Enter", "C-c", "BSpace", "Down", "Up":
			p.run("send-keys", "-t", session, k)
		default:
			p.run("send-keys", "-t", session, "-l", k)
		}
		time.Sleep(pause)
	}
}

// Screen is what the pane shows now.
func (p *Pane) Screen() string {
	return p.run("capture-pane", "-p", "-t", session)
}

// ScreenStyled is what the pane shows now with its attributes and colours
// as escape sequences.
func (p *Pane) ScreenStyled() string {
	return p.run("capture-pane", "-p", "-e", "-t", session)
}

// WaitFor waits until the screen shows every text, at most timeout, and
// returns the screen.
func (p *Pane) WaitFor(timeout time.Duration, texts ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := p.Screen()
		missing := ""
		for _, text := range texts {
			if !strings.Contains(s, text) {
				missing = text
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q; it shows:\n%s", missing, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Exited waits for the program to end and returns its exit status; it is
// an error for the program to leave the terminal in its alternate screen.
func (p *Pane) Exited() string {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := strings.TrimSpace(p.run("display-message", "-p", "-t", session, "#{pane_dead} #{pane_dead_status} #{alternate_on}"))
		if strings.HasPrefix(st, "1 ") {
			if !strings.HasSuffix(st, " 0") {
				p.t.Errorf("the alternate screen is still on after the program ended (pane: %s)", st)
			}
			return strings.Fields(st)[1]
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the program did not end; pane %s, screen:\n%s", st, p.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
