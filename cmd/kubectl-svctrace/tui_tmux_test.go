package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/snapshot"
)

// tmuxPane runs a command in a pane of its own tmux server, 80×24, and
// drives it as a user would: keys in, the screen read back.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func newTmuxPane(t *testing.T, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux not found in PATH, and CI=true forbids skipping")
		}
		t.Skip("tmux not found in PATH")
	}
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	p.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "svctrace", "-e", "TERM=xterm-256color", command)
	// The pane stays once the command ends, so its exit status can be read.
	p.run("set-option", "-t", "svctrace", "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends each key on its own, a little apart, as typed (tmux key
// names: Enter, Escape, C-c; anything else is literal text).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		switch k {
		case "Enter", "Escape", "C-c", "BSpace", "Down", "Up":
			p.run("send-keys", "-t", "svctrace", k)
		default:
			p.run("send-keys", "-t", "svctrace", "-l", k)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func (p *tmuxPane) screen() string {
	return p.run("capture-pane", "-p", "-t", "svctrace")
}

// waitFor waits until the screen shows text, and returns the screen.
func (p *tmuxPane) waitFor(text string) string {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := p.screen()
		if strings.Contains(s, text) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q; it shows:\n%s", text, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exited waits for the command to end and returns its exit status.
func (p *tmuxPane) exited() string {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := strings.TrimSpace(p.run("display-message", "-p", "-t", "svctrace", "#{pane_dead} #{pane_dead_status} #{alternate_on}"))
		if strings.HasPrefix(st, "1 ") {
			if !strings.HasSuffix(st, " 0") {
				p.t.Errorf("the alternate screen is still on after the UI left (pane: %s)", st)
			}
			return strings.Fields(st)[1]
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the UI did not end; pane %s, screen:\n%s", st, p.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTUIInTmux drives the real binary in a real terminal on the bundled
// lab snapshot: open it, filter to a Service, open a node, unfold a
// backend and see its DNAT rule, quit with q; then on the same snapshot
// broken (the API dropped an endpoint), open the findings, go from one to
// the endpoint's path, and leave with Ctrl-C.
func TestTUIInTmux(t *testing.T) {
	bin := buildBinary(t)
	healthy := filepath.Join("..", "..", "examples", "lab-nftables-v1.36.3.snapshot.yaml")

	p := newTmuxPane(t, fmt.Sprintf("%s tui --snapshot %s --log-file %s", bin, healthy, filepath.Join(t.TempDir(), "tui.log")))
	p.waitFor("default/crowded")
	p.keys("/", "default/web ", "Enter")
	p.waitFor("1 of 21")
	p.keys("Enter")
	p.waitFor("NODE")
	p.keys("Enter")
	p.waitFor("from a pod:")
	p.keys("j", "j", "Enter")
	s := p.waitFor("dnat ip to")
	if !strings.Contains(s, "10.244.1.10:8080") || !strings.Contains(s, "default/web › paths on node1") {
		t.Errorf("the unfolded backend is not default/web's first on node1:\n%s", s)
	}
	p.keys("q")
	if st := p.exited(); st != "0" {
		t.Errorf("q: exit status %s, want 0", st)
	}

	s0, err := snapshot.Load(healthy)
	if err != nil {
		t.Fatal(err)
	}
	dropEndpoint(t, s0, "default", "web", "10.244.1.11")
	broken := filepath.Join(t.TempDir(), "broken.snapshot.yaml")
	if err := snapshot.Save(s0, broken); err != nil {
		t.Fatal(err)
	}
	p = newTmuxPane(t, fmt.Sprintf("%s tui --snapshot %s --log-file %s", bin, broken, filepath.Join(t.TempDir(), "tui.log")))
	p.waitFor("default/crowded")
	p.keys("f")
	p.waitFor("StaleEndpoint")
	p.keys("Enter")
	s = p.waitFor("default/web on node1")
	if !strings.Contains(s, "− 1/3   10.244.1.11:8080") {
		t.Errorf("the finding did not open the stale endpoint's path:\n%s", s)
	}
	p.keys("C-c")
	if st := p.exited(); st != "0" {
		t.Errorf("Ctrl-C: exit status %s, want 0", st)
	}
}

// dropEndpoint removes an endpoint address from a Service's slices.
func dropEndpoint(t *testing.T, s *snapshot.Snapshot, ns, name, addr string) {
	t.Helper()
	for i := range s.Cluster.EndpointSlices {
		es := &s.Cluster.EndpointSlices[i]
		if es.Namespace != ns || es.Labels["kubernetes.io/service-name"] != name {
			continue
		}
		for j, ep := range es.Endpoints {
			if len(ep.Addresses) > 0 && ep.Addresses[0] == addr {
				es.Endpoints = append(es.Endpoints[:j], es.Endpoints[j+1:]...)
				return
			}
		}
	}
	t.Fatalf("%s/%s has no endpoint %s", ns, name, addr)
}

// TestTUINeedsATerminal: without a terminal, tui says so and exits 2.
func TestTUINeedsATerminal(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "tui", "--snapshot", filepath.Join("..", "..", "examples", "lab-nftables-v1.36.3.snapshot.yaml"))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || err == nil {
		t.Fatalf("exit code %d, want 2; output: %s", code, out)
	}
	if !strings.Contains(string(out), "tui needs a terminal") {
		t.Errorf("the error does not say a terminal is needed: %s", out)
	}
}
