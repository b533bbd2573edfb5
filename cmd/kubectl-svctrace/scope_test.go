package main

import (
	"path/filepath"
	"strings"
	"testing"
)

const labIPTables = "../../examples/lab-iptables-v1.36.3.snapshot.yaml"

// TestTypoIsAnError: a Service, port, namespace or node that does not exist
// is exit 2 with the close matches, for every command that takes one.
func TestTypoIsAnError(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"drift, unknown service", []string{"drift", "default/nope"}, `service default/nope not found; Services in namespace default:`},
		{"drift, mistyped service", []string{"drift", "default/wbe"}, "did you mean web?"},
		{"explain, mistyped service", []string{"explain", "default/ngnix-x"}, "service default/ngnix-x not found"},
		{"explain, service in another namespace", []string{"explain", "kube-system/web"}, `namespace "kube-system" has no Service; namespaces with Services: default`},
		{"explain, mistyped port", []string{"explain", "web:htp"}, `service default/web has no port "htp"; did you mean http? (ports: http (80/TCP))`},
		{"explain, unknown port number", []string{"explain", "web:8080"}, `service default/web has no port "8080"; its ports: http (80/TCP)`},
		{"drift, mistyped namespace", []string{"drift", "-n", "defualt"}, `namespace "defualt" has no Service; did you mean default?`},
		{"drift, mistyped node", []string{"drift", "--node", "nod1"}, `node "nod1" is not in the snapshot; did you mean node1 or node2?`},
		{"explain, unknown node", []string{"explain", "web", "--node", "node3"}, `node "node3" is not in the snapshot; did you mean node1 or node2?`},
		{"trace, mistyped node", []string{"trace", "--node", "ndoe2", "--src", "10.244.1.12", "--dst", "10.96.0.1:443"}, "did you mean node2 or node1?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "--snapshot", labIPTables)
			if !strings.Contains(strings.Join(c.args, " "), "--node") {
				args = append(args, "--node", "node1")
			}
			out, stderr, code := run(t, args...)
			if code != exitError {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitError, out, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, c.want)
			}
		})
	}
}

// TestPortByNumber: explain web:80 is explain web:http.
func TestPortByNumber(t *testing.T) {
	byName, _, code := run(t, "explain", "web:http", "--snapshot", labIPTables, "--node", "node1")
	if code != 0 {
		t.Fatalf("explain web:http: exit %d", code)
	}
	byNumber, stderr, code := run(t, "explain", "web:80", "--snapshot", labIPTables, "--node", "node1")
	if code != 0 {
		t.Fatalf("explain web:80: exit %d: %s", code, stderr)
	}
	if byName != byNumber {
		t.Errorf("explain web:80 differs from explain web:http:\n%s\n---\n%s", byNumber, byName)
	}
	if !strings.Contains(byNumber, "10.244.1.10:8080") {
		t.Errorf("explain web:80 shows no backend:\n%s", byNumber)
	}
}

// TestDriftScopeCountsItsFrontends: the summary counts the frontends of the
// Service asked about, not the node's.
func TestDriftScopeCountsItsFrontends(t *testing.T) {
	out, stderr, code := run(t, "drift", "web", "--snapshot", labIPTables, "--node", "node1")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	if !strings.Contains(out, "node node1 (iptables mode): 1 frontend checked, 0 findings") {
		t.Errorf("drift web:\n%s", out)
	}
}

// TestImportNodeAddressesFromNodeObject: an nftables capture imported
// without --node-ip takes the node's addresses from its Node object, so the
// answer is the same with and without the flag.
func TestImportNodeAddressesFromNodeObject(t *testing.T) {
	const dir = "../../testdata/kube-proxy-v1.36.3/two-nodes/"
	drift := func(extra ...string) (string, int) {
		snap := filepath.Join(t.TempDir(), "snap.yaml")
		args := append([]string{"collect", "--node", "node2", "--objects", dir + "objects.yaml", "--nft-json", dir + "node2.nft.json", "-f", snap}, extra...)
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("collect: exit %d: %s", code, stderr)
		}
		out, _, code := run(t, "drift", "--snapshot", snap, "-o", "json")
		var types []string
		for _, f := range decodeDrift(t, out).Findings {
			types = append(types, f.Type+" "+strings.Join(f.Frontends, ","))
		}
		return strings.Join(types, "\n"), code
	}
	without, c1 := drift()
	with, c2 := drift("--node-ip", "192.0.2.11")
	if without != with || c1 != c2 {
		t.Errorf("without --node-ip (exit %d):\n%s\nwith --node-ip 192.0.2.11 (exit %d):\n%s", c1, without, c2, with)
	}
	// The capture's nodeport-ips set is empty: the healthy kube-proxy that
	// wrote it found 192.0.2.11 on no interface of the node. Which
	// addresses are local is node state an import lacks, so the kernel's
	// own list decides, and says so.
	if c1 != exitOK {
		t.Errorf("want no drift on the healthy capture, got exit %d:\n%s", c1, without)
	}
}

// TestNodeMatchesNoNodeObject: on import, a --node that names no Node of the
// objects is refused with the close matches.
func TestNodeMatchesNoNodeObject(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	if _, stderr, code := run(t, "collect", "--node", "nodee1", "--objects", fixture+"objects.yaml", "--iptables-save", fixture+"node1.iptables-save.txt", "-f", snap); code != 0 {
		// collect may refuse it already; then drift has nothing to read.
		if !strings.Contains(stderr, `"nodee1"`) || !strings.Contains(stderr, "node1") {
			t.Fatalf("collect: exit %d: %s", code, stderr)
		}
		return
	}
	out, stderr, code := run(t, "drift", "--snapshot", snap)
	if code != exitError || !strings.Contains(stderr, `node "nodee1" matches no Node object of the API; did you mean node1`) {
		t.Errorf("drift: exit %d\n%s%s", code, out, stderr)
	}
}
