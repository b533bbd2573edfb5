//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
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
	// ProxyArgs, when set, restart node1's kube-proxy with these flags
	// beyond the lab's (its settings are the failure) until it has
	// synced, and stop it again; undone, it syncs once with the lab's.
	ProxyArgs []string `yaml:"proxy_args"`
	// Running keeps that kube-proxy running while drift is checked, so
	// that its settings are read from it (/configz) rather than from its
	// rules; it is stopped before the case is undone.
	Running bool `yaml:"running"`
	// FailWrites names kernel tools (iptables-restore) whose runs fail
	// for node1's kube-proxy, started for the case (with ProxyArgs) and
	// kept running while drift is checked; API is a manifest applied
	// then, and deleted once its writes work again.
	FailWrites []string `yaml:"fail_writes"`
	API        string   `yaml:"api"`
	// FreezeAPI starts node1's kube-proxy (with ProxyArgs) through a
	// relay to the API server that then freezes (connections kept open,
	// nothing passed); API is applied once kube-proxy has queued nothing
	// for longer than svctrace allows a watch to lag.
	FreezeAPI bool `yaml:"freeze_api"`
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
		if fc.Name == "" || len(fc.Links) == 0 || fc.Do == "" && len(fc.ProxyArgs) == 0 && len(fc.FailWrites) == 0 && !fc.FreezeAPI || len(fc.Modes) == 0 {
			t.Fatalf("testdata/failures.yaml: case %q lacks a name, a link, what it does or its modes", fc.Name)
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
			if len(fc.FailWrites) > 0 {
				failingWrites(t, c, fc)
				return
			}
			if fc.FreezeAPI {
				frozenWatch(t, c, fc)
				return
			}
			resynced := len(fc.ProxyArgs) == 0
			resync := func() {
				if !resynced {
					resynced = true
					c.syncOnceWith(t, "node1", c.proxyArgs)
				}
			}
			stop := func() {
				if c.KubeProxyRunning("node1") {
					if err := c.StopKubeProxy("node1"); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(fc.ProxyArgs) > 0 {
				t.Cleanup(resync)
				args := append(slices.Clone(c.proxyArgs), fc.ProxyArgs...)
				if fc.Running {
					t.Cleanup(stop)
					c.startSynced(t, "node1", args)
				} else {
					c.syncOnceWith(t, "node1", args)
				}
			}
			if fc.Do != "" {
				if out, err := c.Exec("node1", "sh", "-ec", fc.Do); err != nil {
					t.Fatalf("%s: %v\n%s", fc.Do, err, out)
				}
			}
			waitDrift(t, c, "node1", slices.Clone(fc.Want[c.mode]))
			stop()
			restore()
			resync()
			waitDrift(t, c, "node1", nil)
		})
	}
}

// syncOnceWith starts the node's kube-proxy with args, waits for its
// sync, and stops it: the node's rules are then what kube-proxy writes
// with those settings, and nothing changes them.
func (c *cluster) syncOnceWith(t *testing.T, node string, args []string) {
	t.Helper()
	c.startSynced(t, node, args)
	if err := c.StopKubeProxy(node); err != nil {
		t.Fatal(err)
	}
}

// startSynced starts the node's kube-proxy with args and waits for its
// sync; then it relabels the zones, since a kube-proxy just started may
// miss its zone label (see relabelZones).
func (c *cluster) startSynced(t *testing.T, node string, args []string) {
	t.Helper()
	if err := c.StartKubeProxyVersion(node, c.version, c.mode, args...); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSynced(node); err != nil {
		t.Fatal(err)
	}
	c.relabelZones(t, node)
}

// failingWrites runs a case whose kube-proxy cannot write: node1's
// kube-proxy starts with wrappers of fc.FailWrites first in its PATH,
// which run the real tools until the case makes them fail; then the
// case's API change waits, unwritten, and drift (kube-proxy running) must
// say so. Undone, kube-proxy writes it, the change is deleted, and
// kube-proxy is stopped again, as the matrix left it.
func failingWrites(t *testing.T, c *cluster, fc failureCase) {
	dir := t.TempDir()
	fail := filepath.Join(dir, "fail")
	for _, tool := range fc.FailWrites {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\nif [ -e %s ]; then echo \"%s: line 1 failed (svctrace lab)\" >&2; exit 1; fi\nexec %s \"$@\"\n", fail, tool, real)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	obj := apiObject(t, fc.API)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := c.StartKubeProxyVersion("node1", c.version, c.mode, append(slices.Clone(c.proxyArgs), fc.ProxyArgs...)...); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the next case finds the API and node1 as the
	// matrix left them: the change gone, kube-proxy stopped.
	t.Cleanup(func() {
		_ = os.Remove(fail)
		_ = c.Delete(obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name)
		if c.KubeProxyRunning("node1") {
			_ = c.WaitSynced("node1")
			_ = c.StopKubeProxy("node1")
		}
	})
	if err := os.WriteFile(fail, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Apply(t, fc.API)
	waitDrift(t, c, "node1", slices.Clone(fc.Want[c.mode]))
	if err := os.Remove(fail); err != nil {
		t.Fatal(err)
	}
	deleteWritten(t, c, obj)
}

// deleteWritten ends a case whose API change node1's running kube-proxy
// writes again: no drift with it, none once it is deleted, and kube-proxy
// is stopped, as the matrix left it.
func deleteWritten(t *testing.T, c *cluster, obj manifest) {
	waitDrift(t, c, "node1", nil)
	if err := c.Delete(obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name); err != nil {
		t.Fatal(err)
	}
	waitDrift(t, c, "node1", nil)
	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
}
