package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// bundled are the lab captures in examples/: two healthy nodes each, with
// the Service shapes every real cluster has (an endpoint on a node's own
// address without nodeName, a hostNetwork endpoint, ETP Local without a
// local endpoint next to localhost NodePorts, source ranges, an endpoint on
// the first address a pod probe would take).
var bundled = []string{
	"../../examples/lab-iptables-v1.36.3.snapshot.yaml",
	"../../examples/lab-nftables-v1.36.3.snapshot.yaml",
	"../../examples/lab-nftables-v1.33.13.snapshot.yaml",
}

// TestBundledCapturesHealthy: every node of every lab capture was healthy
// when captured, so drift finds nothing on any of them.
func TestBundledCapturesHealthy(t *testing.T) {
	for _, snap := range bundled {
		for _, node := range []string{"node1", "node2"} {
			t.Run(filepath.Base(snap)+"/"+node, func(t *testing.T) {
				out, stderr, code := run(t, "drift", "--snapshot", snap, "--node", node, "-o", "wide")
				if code != exitOK {
					t.Fatalf("exit %d, want no drift:\n%s%s", code, out, stderr)
				}
			})
		}
	}
}

// TestBundledCapturesHaveTheShapes keeps the captures honest: the Services
// the healthy check is about are in them.
func TestBundledCapturesHaveTheShapes(t *testing.T) {
	for _, snap := range bundled {
		s, err := snapshot.Load(snap)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, svc := range s.Cluster.Services {
			names = append(names, svc.Namespace+"/"+svc.Name)
		}
		for _, want := range []string{"default/kube-api", "default/hostnet", "default/local-node1", "default/crowded", "default/web-lb"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s lacks Service %s: recapture it with the lab (SVCTRACE_LAB_CAPTURE, see examples/README.md)", snap, want)
			}
		}
	}
}

// TestNodeAddressEndpoint: the API server's endpoint on node1's own address
// (no nodeName) is delivered locally there: not masqueraded from outside,
// and a hairpin for node1 itself.
func TestNodeAddressEndpoint(t *testing.T) {
	out, stderr, code := run(t, "explain", "default/kube-api", "--snapshot", bundled[0], "--node", "node1")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	if !strings.Contains(out, "192.0.2.10:6443") || !strings.Contains(out, "from outside:  forward to 1 backend, not masqueraded") {
		t.Errorf("explain default/kube-api on node1:\n%s", out)
	}
}

// TestFirewallDropDeleted: with the DROP of a LoadBalancer's source-range
// firewall deleted from a real capture, an outside client passes untouched:
// one FirewallMismatch, not a MissingFrontend per source class.
func TestFirewallDropDeleted(t *testing.T) {
	s, err := snapshot.Load(bundled[0])
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`(?m)^-A KUBE-PROXY-FIREWALL -d 198\.51\.100\.50/32 .*-j DROP\n`)
	n, _ := s.Node("node1")
	removed := 0
	for i := range n.Dumps {
		if m := drop.FindAllStringIndex(n.Dumps[i].Text, -1); len(m) > 0 {
			removed += len(m)
			n.Dumps[i].Text = drop.ReplaceAllString(n.Dumps[i].Text, "")
		}
	}
	if removed != 1 {
		t.Fatalf("removed %d firewall drops, want 1", removed)
	}
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := snapshot.Save(s, path); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "drift", "--snapshot", path, "--node", "node1", "-o", "json")
	if code != exitDrift {
		t.Fatalf("exit %d, want 1: %s%s", code, out, stderr)
	}
	var got []string
	for _, f := range decodeDrift(t, out).Findings {
		got = append(got, f.Type+" "+f.Service+" "+f.Expected+" | "+f.Observed)
	}
	want := []string{"FirewallMismatch default/web-lb:http 203.0.113.0/24; others dropped | 203.0.113.0/24; others pass untouched"}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_ = os.Remove(path)
}
