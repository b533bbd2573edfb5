//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// release is one kube-proxy release of svctrace's window and what the lab
// runs against it: a line of test/tools/releases.txt.
type release struct {
	version string
	// full names the modes that run the whole matrix (healthy, repair,
	// traffic, every change); quick the modes that run the short pass.
	full, quick []string
}

// releasesFile lists the releases, with what each runs.
const releasesFile = "../tools/releases.txt"

// loadReleases reads the releases file.
func loadReleases(t *testing.T) []release {
	data, err := os.ReadFile(releasesFile)
	if err != nil {
		t.Fatal(err)
	}
	modes := func(field string) []string {
		if field == "-" {
			return nil
		}
		return strings.Split(field, ",")
	}
	var out []release
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			t.Fatalf("%s:%d: want a version and two lists of modes, got %q", releasesFile, i+1, line)
		}
		out = append(out, release{version: f[0], full: modes(f[1]), quick: modes(f[2])})
	}
	return out
}

// releasesWanted is the releases SVCTRACE_LAB_RELEASES names (a comma-separated list of
// versions), or all of them.
func releasesWanted(t *testing.T) []release {
	releases := loadReleases(t)
	env := os.Getenv("SVCTRACE_LAB_RELEASES")
	if env == "" {
		return releases
	}
	var out []release
	for v := range strings.SplitSeq(env, ",") {
		i := slices.IndexFunc(releases, func(r release) bool { return r.version == strings.TrimSpace(v) })
		if i < 0 {
			t.Fatalf("SVCTRACE_LAB_RELEASES: %q is no release of %s", v, releasesFile)
		}
		out = append(out, releases[i])
	}
	return out
}

// TestReleases proves svctrace against each kube-proxy release of its
// window: no finding on healthy nodes, a repair plan that changes nothing
// (svctrace renders what that release wrote, rule for rule), and the exact
// finding for each change.
func TestReleases(t *testing.T) {
	for _, r := range releasesWanted(t) {
		t.Run(r.version, func(t *testing.T) {
			for _, mode := range r.full {
				t.Run(mode, func(t *testing.T) { runMatrix(t, startMatrix(t, mode, r.version)) })
			}
			if len(r.quick) > 0 {
				t.Run(strings.Join(r.quick, " then "), func(t *testing.T) { quickPass(t, r.version, r.quick) })
			}
		})
	}
}

// quickPass runs the short pass on one lab for each mode in turn: healthy
// nodes, a repair plan that changes nothing, an API change and a kernel
// change on node1 with kube-proxy stopped, then kube-proxy restarted; the
// next mode starts on nodes the previous one left, as an operator's
// switch does.
func quickPass(t *testing.T, version string, modes []string) {
	c := startMatrix(t, modes[0], version)
	nodes := []string{"node1", "node2"}
	for i, mode := range modes {
		if i > 0 {
			c.switchMode(t, mode)
		}
		t.Run(mode, func(t *testing.T) {
			t.Run("healthy", func(t *testing.T) {
				for _, n := range nodes {
					waitDrift(t, c, n, nil)
				}
			})
			t.Run("reconcile rules: nothing to change", func(t *testing.T) { nothingToRepair(t, c) })
			if dir := os.Getenv("SVCTRACE_LAB_CAPTURE"); dir != "" {
				c.capture(t, filepath.Join(dir, fmt.Sprintf("lab-%s-%s.snapshot.yaml", c.mode, c.version)))
			}
			if err := c.StopKubeProxy("node1"); err != nil {
				t.Fatal(err)
			}
			t.Run("endpoint removed", func(t *testing.T) { endpointRemoved(t, c) })
			if mode == "nftables" {
				t.Run("map element deleted in the kernel", func(t *testing.T) {
					deleteMapElement(t, c, "service-ips", clusterIP(t, c, "web")+" . tcp . 80", "MissingFrontend default/web:http forward")
				})
			} else {
				t.Run("rule deleted in the kernel", func(t *testing.T) { iptablesRuleDeleted(t, c) })
			}
			if err := c.startProxy("node1"); err != nil {
				t.Fatal(err)
			}
			c.relabelZones(t, "node1")
			waitDrift(t, c, "node1", nil)
		})
	}
}

// TestReleasesIPVS runs the oldest and the newest release of the window in
// ipvs mode on the lab's VM node (the host's kernel has no IPVS), with the
// IPVS matrix's Services: drift finds nothing, and a repair in the
// release's layout changes nothing.
func TestReleasesIPVS(t *testing.T) {
	rs := releasesWanted(t)
	ends := []string{rs[0].version}
	if len(rs) > 1 {
		ends = append(ends, rs[len(rs)-1].version)
	}
	for _, v := range ends {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			_, vm := startIPVSVMVersion(ctx, t, v)
			vmPodNet(ctx, t, vm)
			if err := vm.StartKubeProxy(ctx, "ipvs"); err != nil {
				t.Fatal(err)
			}
			sh := vmShell{ctx: ctx, t: t, vm: vm}
			if out, code := sh.svctrace("drift --local --node vm1 --kube-proxy-version " + v); code != 0 {
				t.Errorf("drift under kube-proxy %s: exit %d:\n%s", v, code, out)
			}
			if out, code := sh.svctrace("reconcile rules --local --node vm1 --kube-proxy-version " + v); code != 0 || !strings.Contains(out, "IPv4 (legacy backend): 0 changes") {
				t.Errorf("repair under kube-proxy %s: exit %d:\n%s", v, code, out)
			}
		})
	}
}

// switchMode moves both nodes to kube-proxy in another mode, as an operator does (stop,
// start with the other mode), over what the first left; the nodes are relabelled after, so
// that a check is about the switch, not about kube-proxy's zone race (see TestModeSwitch).
func (c *cluster) switchMode(t *testing.T, mode string) {
	t.Helper()
	nodes := []string{"node1", "node2"}
	for _, n := range nodes {
		if err := c.StopKubeProxy(n); err != nil {
			t.Fatal(err)
		}
	}
	c.mode = mode
	for _, n := range nodes {
		if err := c.startProxy(n); err != nil {
			t.Fatal(err)
		}
	}
	c.relabelZones(t, nodes...)
}
