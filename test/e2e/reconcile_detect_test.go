//go:build linux

package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/test/lab"
)

// TestReconcileLocalDetectors holds drift and the render to kube-proxy
// v1.36 in iptables and nftables mode with the local-traffic detectors
// that go by interface (a bridge, an interface name prefix) instead of
// the cluster CIDR: on the node as kube-proxy wrote it, drift finds
// nothing and reconcile rules has nothing to change, with kube-proxy's
// configuration read from it and, once it is stopped, with the detector
// read off its rules.
func TestReconcileLocalDetectors(t *testing.T) {
	l := lab.Start(t, lab.Options{Nodes: 1})
	l.Apply(t, ipvsServices)
	bin := buildSvctrace(t)
	ns, err := l.NetNS("node1")
	if err != nil {
		t.Fatal(err)
	}
	// drift on the healthy node finds nothing: the pod probe comes in on
	// the pods' interface, and the node's own packets are masqueraded or
	// not as each mode's interface match takes them.
	drift := func(t *testing.T, when string) {
		t.Helper()
		out, err := exec.Command("ip", "netns", "exec", ns, bin, "drift", "--local", "--node", "node1", "--kubeconfig", l.Kubeconfig).CombinedOutput()
		if err != nil {
			t.Errorf("drift, %s: %v\n%s", when, err, out)
		}
	}
	plan := func(t *testing.T) string {
		t.Helper()
		out, err := exec.Command("ip", "netns", "exec", ns, bin, "reconcile", "rules", "--local", "--node", "node1",
			"--kube-proxy-version", l.ProxyVersion, "--kubeconfig", l.Kubeconfig).CombinedOutput()
		if err != nil {
			t.Errorf("reconcile rules: %v", err)
		}
		return string(out)
	}
	for _, mode := range []string{"iptables", "nftables"} {
		for _, d := range []struct{ name, flag string }{
			{"InterfaceNamePrefix", "--pod-interface-name-prefix=veth"},
			{"BridgeInterface", "--pod-bridge-interface=cni0"},
		} {
			t.Run(mode+"/"+d.name, func(t *testing.T) {
				if err := l.StartKubeProxy("node1", mode, "--detect-local-mode="+d.name, d.flag); err != nil {
					t.Fatal(err)
				}
				waitIPv6Sync(t, l, "node1")
				running := plan(t)
				drift(t, "kube-proxy running")
				if err := l.StopKubeProxy("node1"); err != nil {
					t.Fatal(err)
				}
				stopped := plan(t)
				drift(t, "kube-proxy stopped")
				for when, out := range map[string]string{"kube-proxy running": running, "kube-proxy stopped": stopped} {
					if !strings.Contains(out, "kube-proxy "+mode+" mode") || strings.Count(out, ": 0 changes") != 2 {
						t.Errorf("%s:\n%s", when, out)
					}
				}
			})
		}
	}
}

// waitIPv6Sync waits for the first sync of the node's IPv6 proxier, which
// may end after the IPv4 one the lab waits for.
func waitIPv6Sync(t *testing.T, l *lab.Lab, node string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^kubeproxy_sync_proxy_rules_duration_seconds_count\{ip_family="IPv6"\} ([1-9]\d*)$`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		m, err := l.KubeProxyMetrics(node)
		if err == nil && re.MatchString(m) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-proxy on %s: no IPv6 sync in 30s (%v)", node, err)
		}
	}
}
