package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/tmuxtest"
	"github.com/svctrace/svctrace/snapshot"
)

// TestTUIInTmux drives the real binary in a real terminal on the bundled
// lab snapshot: open it, filter to a Service, open a node, unfold a
// backend and see its DNAT rule, quit with q; then on the same snapshot
// broken (the API dropped an endpoint), open the findings, go from one to
// the endpoint's path, and leave with Ctrl-C.
func TestTUIInTmux(t *testing.T) {
	bin := buildBinary(t)
	healthy := filepath.Join("..", "..", "examples", "lab-nftables-v1.36.3.snapshot.yaml")

	p := tmuxtest.Start(t, fmt.Sprintf("%s tui --snapshot %s --log-file %s", bin, healthy, filepath.Join(t.TempDir(), "tui.log")))
	p.WaitFor(20*time.Second, "default/crowded")
	p.Keys("/", "default/web ", "Enter")
	p.WaitFor(20*time.Second, "1 of 21")
	p.Keys("Enter")
	readmeScreen(t, "matrix", p.WaitFor(20*time.Second, "NODE"))
	p.Keys("Enter")
	p.WaitFor(20*time.Second, "from a pod:")
	p.Keys("j", "j", "Enter")
	s := p.WaitFor(20*time.Second, "dnat ip to")
	if !strings.Contains(s, "10.244.1.10:8080") || !strings.Contains(s, "default/web › paths on node1") {
		t.Errorf("the unfolded backend is not default/web's first on node1:\n%s", s)
	}
	readmeScreen(t, "paths", s)
	p.Keys("q")
	if st := p.Exited(); st != "0" {
		t.Errorf("q: exit status %s, want 0", st)
	}

	broken := brokenSnapshot(t)
	p = tmuxtest.Start(t, fmt.Sprintf("%s tui --snapshot %s --log-file %s", bin, broken, filepath.Join(t.TempDir(), "tui.log")))
	p.WaitFor(20*time.Second, "default/crowded")
	p.Keys("f")
	p.WaitFor(20*time.Second, "StaleEndpoint")
	p.Keys("Enter")
	s = p.WaitFor(20*time.Second, "default/web on node1")
	if !strings.Contains(s, "− 1/3   10.244.1.11:8080") {
		t.Errorf("the finding did not open the stale endpoint's path:\n%s", s)
	}
	p.Keys("C-c")
	if st := p.Exited(); st != "0" {
		t.Errorf("Ctrl-C: exit status %s, want 0", st)
	}
}

// TestTUINoColor: with NO_COLOR the UI draws no colour at all, and the
// selection still shows (reverse video); without it, drift is coloured.
func TestTUINoColor(t *testing.T) {
	bin := buildBinary(t)
	broken := brokenSnapshot(t)
	// A foreground or background colour; 39 and 49 (the defaults) are
	// none.
	colour := regexp.MustCompile(`\x1b\[(?:[0-9]+;)*(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9]+)*m`)
	for _, noColor := range []bool{true, false} {
		env := []string{"NO_COLOR="}
		if noColor {
			env = []string{"NO_COLOR=1"}
		}
		p := tmuxtest.Start(t, fmt.Sprintf("%s tui --snapshot %s --log-file %s", bin, broken, filepath.Join(t.TempDir(), "tui.log")), env...)
		p.WaitFor(20*time.Second, "default/crowded")
		p.Keys("f")
		p.WaitFor(20*time.Second, "StaleEndpoint")
		styled := p.ScreenStyled()
		if got := colour.FindString(styled); noColor && got != "" {
			t.Errorf("NO_COLOR=1: the screen has colour %q:\n%q", got, styled)
		} else if !noColor && got == "" {
			t.Errorf("without NO_COLOR the findings are not coloured:\n%q", styled)
		}
		if !strings.Contains(styled, "\x1b[7m") {
			t.Errorf("NO_COLOR=%v: the selection is not in reverse video:\n%q", noColor, styled)
		}
		p.Keys("q")
		p.Exited()
	}
}

// brokenSnapshot writes the bundled nftables lab snapshot after the API
// dropped default/web's endpoint 10.244.1.11, which both nodes still send
// to, and returns its path.
func brokenSnapshot(t *testing.T) string {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "..", "examples", "lab-nftables-v1.36.3.snapshot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dropEndpoint(t, s, "default", "web", "10.244.1.11")
	broken := filepath.Join(t.TempDir(), "broken.snapshot.yaml")
	if err := snapshot.Save(s, broken); err != nil {
		t.Fatal(err)
	}
	return broken
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

// readmeScreen compares a screen with docs/tui.md's capture of it: the
// ```text block after the line "<!-- tui screen: NAME -->". With -update
// the block is rewritten from the screen.
func readmeScreen(t *testing.T, name, screen string) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "tui.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	marker := "<!-- tui screen: " + name + " -->"
	start := slices.Index(lines, marker)
	if start < 0 || start+1 >= len(lines) || lines[start+1] != "```text" {
		t.Fatalf("docs/tui.md has no %q followed by a ```text block", marker)
	}
	end := start + 2
	for end < len(lines) && lines[end] != "```" {
		end++
	}
	if end == len(lines) {
		t.Fatalf("docs/tui.md: the block after %q does not end", marker)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		got = append(got, strings.TrimRight(l, " "))
	}
	if *update {
		out := append(append(append([]string{}, lines[:start+2]...), got...), lines[end:]...)
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := lines[start+2 : end]; !slices.Equal(got, want) {
		t.Errorf("docs/tui.md's %s screen is not what the binary draws (go test ./cmd/kubectl-svctrace -run TestTUIInTmux -update rewrites it):\n--- drawn\n%s\n--- docs/tui.md\n%s",
			name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
