//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// failureCase is one failure users reported upstream, as
// testdata/failures.yaml writes it: what the report showed, made again on
// the lab's node1 with kube-proxy stopped (so that nothing repairs it),
// and the findings drift must give for it, and nothing else.
type failureCase struct {
	Name string `yaml:"name"`
	// Links are the upstream reports; Releases the releases they name.
	Links    []string `yaml:"links"`
	Releases string   `yaml:"releases"`
	Report   string   `yaml:"report"`
	// Modes are kube-proxy's modes the case runs in; Do and Undo shell
	// scripts run in node1's network namespace. After Undo, the iptables
	// rules are put back as they were before Do (kube-proxy's own
	// included), whatever the scripts left.
	Modes []string `yaml:"modes"`
	Do    string   `yaml:"do"`
	Undo  string   `yaml:"undo"`
	// Want are, by mode, the findings (prefixes of "TYPE SERVICE
	// EXPECTED|OBSERVED"), the whole list.
	Want map[string][]string `yaml:"want"`
}

// loadFailures reads testdata/failures.yaml.
func loadFailures(t *testing.T) []failureCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "failures.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []failureCase
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/failures.yaml: %v", err)
	}
	for _, fc := range cases {
		if fc.Name == "" || len(fc.Links) == 0 || fc.Do == "" || len(fc.Modes) == 0 {
			t.Fatalf("testdata/failures.yaml: case %q lacks a name, a link, a do script or its modes", fc.Name)
		}
		for _, m := range fc.Modes {
			if _, ok := fc.Want[m]; !ok {
				t.Fatalf("testdata/failures.yaml: case %s runs in %s mode but wants nothing there", fc.Name, m)
			}
		}
	}
	return cases
}

// failureCorpus runs the corpus's cases of the cluster's mode on node1,
// whose kube-proxy is stopped: each gives exactly its findings, and none
// once undone.
func failureCorpus(t *testing.T, c *cluster) {
	for _, fc := range loadFailures(t) {
		if !slices.Contains(fc.Modes, c.mode) {
			continue
		}
		t.Run("upstream failure "+fc.Name, func(t *testing.T) {
			saved := filepath.Join(t.TempDir(), "iptables.save")
			if out, err := c.Exec("node1", "sh", "-c", "iptables-save > "+saved); err != nil {
				t.Fatalf("saving the rules: %v\n%s", err, out)
			}
			restored := false
			restore := func() {
				if restored {
					return
				}
				restored = true
				script := "iptables-restore < " + saved
				if fc.Undo != "" {
					script = fc.Undo + "\n" + script
				}
				if out, err := c.Exec("node1", "sh", "-ec", script); err != nil {
					t.Fatalf("undoing %s: %v\n%s", fc.Name, err, out)
				}
			}
			t.Cleanup(restore)
			if out, err := c.Exec("node1", "sh", "-ec", fc.Do); err != nil {
				t.Fatalf("%s: %v\n%s", fc.Do, err, out)
			}
			waitDrift(t, c, "node1", slices.Clone(fc.Want[c.mode]))
			restore()
			waitDrift(t, c, "node1", nil)
		})
	}
}
