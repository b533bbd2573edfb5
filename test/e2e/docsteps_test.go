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

	"github.com/svctrace/svctrace/test/lab"
)

// docCommands is the first ```sh block of a document, a command a line,
// with the names a real cluster has (a registry, a Service, a node)
// replaced by the lab's: from → to, each of which the block must name, so
// that the document cannot move away from what the test runs.
func docCommands(t *testing.T, path string, names map[string]string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
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
		t.Fatalf("%s has no sh block", path)
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

// docShell runs a line of a document with bash, as a user types it: from
// the repository's root, with the lab's kubectl and this svctrace (as the
// kubectl plugin kubectl-svctrace) first on PATH and the lab's kubeconfig
// in KUBECONFIG, in network namespace ns ("": the test's own, the machine
// that builds; the control plane's is a workstation on no node).
func docShell(l *lab.Lab, bin, root string) func(ctx context.Context, ns, line string) (string, error) {
	return func(ctx context.Context, ns, line string) (string, error) {
		argv := []string{"bash", "-euo", "pipefail", "-c", line}
		if ns != "" {
			argv = append([]string{"ip", "netns", "exec", ns}, argv...)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = root
		kubectl := filepath.Join(lab.CacheDir(), l.K8sVersion)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+l.Kubeconfig,
			"PATH="+filepath.Dir(bin)+":"+kubectl+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
