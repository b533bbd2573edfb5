//go:build linux

package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// docCommands is the first ```sh block of a document after the line
// heading ("": the first of all), a command a line, with the names a real cluster has (a registry, a Service, a node)
// replaced by the lab's: from → to, each of which the block must name, so
// that the document cannot move away from what the test runs.
func docCommands(t *testing.T, path, heading string, names map[string]string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in, under := false, heading == ""
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case !under:
			under = line == heading
		case !in && line == "```sh":
			in = true
		case in && line == "```":
			in = false
		case in:
			lines = append(lines, line)
		}
		if !in && len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		t.Fatalf("%s has no sh block under %q", path, heading)
	}
	block := strings.Join(lines, "\n")
	for from, to := range names {
		if !strings.Contains(block, from) {
			t.Fatalf("%s's commands do not name %s any more: the test puts %s in its place\n%s", path, from, to, block)
		}
		block = strings.ReplaceAll(block, from, to)
	}
	return strings.Split(block, "\n")
}

// docShell runs a line of a document with bash, as a user types it, from
// the repository's root, with env added to the test's environment, in
// network namespace ns ("": the test's own, the machine that builds; the
// control plane's is a workstation on no node).
func docShell(root string, env ...string) func(ctx context.Context, ns, line string) (string, error) {
	return func(ctx context.Context, ns, line string) (string, error) {
		argv := []string{"bash", "-euo", "pipefail", "-c", line}
		if ns != "" {
			argv = append([]string{"ip", "netns", "exec", ns}, argv...)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// labShell is docShell on the lab: the lab's kubectl and this svctrace
// (as the kubectl plugin kubectl-svctrace) first on PATH, the lab's
// kubeconfig in KUBECONFIG.
func labShell(l *lab.Lab, bin, root string) func(ctx context.Context, ns, line string) (string, error) {
	kubectl := filepath.Join(lab.CacheDir(), l.K8sVersion)
	return docShell(root, "KUBECONFIG="+l.Kubeconfig, "PATH="+filepath.Dir(bin)+":"+kubectl+":"+os.Getenv("PATH"))
}

// TestREADMEInstall runs the README's install commands as written, from
// this clone's root: go install, then kubectl finds the plugin. GOBIN,
// first on PATH, is the test's (go install's default is GOPATH's bin).
func TestREADMEInstall(t *testing.T) {
	root := repoRoot(t)
	kubectl := lab.EnsureBinaries(t, lab.K8sVersion(), "kubectl")
	gobin := t.TempDir()
	shell := docShell(root, "GOBIN="+gobin, "PATH="+gobin+":"+kubectl+":"+os.Getenv("PATH"))
	steps := docCommands(t, filepath.Join(root, "README.md"), "## Install", nil)
	if len(steps) != 2 || steps[0] != "go install ./cmd/kubectl-svctrace" {
		t.Fatalf("the README's install commands changed: update this test\n%s", strings.Join(steps, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var out string
	for _, line := range steps {
		var err error
		if out, err = shell(ctx, "", line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	// kubectl ran the plugin: its help, named as kubectl names it.
	if !strings.Contains(out, "kubectl svctrace [command]") || !strings.Contains(out, "  drift ") {
		t.Errorf("kubectl svctrace --help:\n%s", out)
	}
}
