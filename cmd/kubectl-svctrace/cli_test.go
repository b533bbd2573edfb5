package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

var update = flag.Bool("update", false, "rewrite golden files")

const fixture = "../../testdata/kube-proxy-v1.36.3/two-nodes/"

// run executes the CLI in-process and returns its output and exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	root.SetArgs(args)
	err := root.Execute()
	code := exitOK
	if err != nil {
		code = exitError
		var ec *exitCodeError
		if errors.As(err, &ec) {
			code = ec.code
		}
		if err.Error() != "" {
			errb.WriteString("error: " + err.Error() + "\n")
		}
	}
	return out.String(), errb.String(), code
}

// importSnapshot writes a snapshot of node1 from the fixture, with the
// given dump instead of the captured one when dump is not "".
func importSnapshot(t *testing.T, dump string) string {
	t.Helper()
	if dump == "" {
		dump = fixture + "node1.iptables-save.txt"
	}
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	_, stderr, code := run(t, "collect", "--node", "node1", "--objects", fixture+"objects.yaml", "--iptables-save", dump, "-f", snap)
	if code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	return snap
}

func writeMutated(t *testing.T, drop string) string {
	t.Helper()
	data, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	removed := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, drop) {
			removed++
			continue
		}
		kept = append(kept, l)
	}
	if removed != 1 {
		t.Fatalf("mutation %q removed %d lines, want 1", drop, removed)
	}
	p := filepath.Join(t.TempDir(), "mutated.txt")
	if err := os.WriteFile(p, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExplainNginxThreeBackends(t *testing.T) {
	snap := importSnapshot(t, "")
	out, stderr, code := run(t, "explain", "default/nginx", "--snapshot", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, ep := range []string{"10.244.0.5:8080", "10.244.0.6:8080", "10.244.1.7:8080"} {
		if !strings.Contains(out, "1/3   "+ep) {
			t.Errorf("backend %s at 1/3 missing:\n%s", ep, out)
		}
	}
	if !strings.Contains(out, "-j DNAT --to-destination 10.244.0.5:8080") {
		t.Errorf("DNAT rule of 10.244.0.5 missing:\n%s", out)
	}
}

func TestDriftHealthyAndMissingEndpoint(t *testing.T) {
	out, stderr, code := run(t, "drift", "--snapshot", importSnapshot(t, ""))
	if code != 0 {
		t.Fatalf("healthy node: exit %d, want 0:\n%s%s", code, out, stderr)
	}
	mut := writeMutated(t, `-A KUBE-SVC-P4Q3KNUAWJVP4ILH -m comment --comment "default/nginx:http -> 10.244.0.5:8080"`)
	out, stderr, code = run(t, "drift", "--snapshot", importSnapshot(t, mut), "-o", "json")
	if code != 1 {
		t.Fatalf("mutated: exit %d, want 1:\n%s%s", code, out, stderr)
	}
	r := decodeDrift(t, out)
	if len(r.Findings) != 1 {
		t.Fatalf("want exactly one finding, got %d: %+v", len(r.Findings), r.Findings)
	}
	f := r.Findings[0]
	if f.Type != "MissingEndpoint" || f.Service != "default/nginx:http" || f.Node != "node1" || f.Expected != "10.244.0.5:8080" {
		t.Errorf("finding = %+v", f)
	}
}

func TestBadDumpsExit2(t *testing.T) {
	data, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.Split(string(data), "\n")
	cases := map[string]struct {
		text     string
		wantLine string
	}{
		"truncated": {strings.Join(lines[:120], "\n") + "\n", ":120:"},
		"garbage":   {strings.Join(lines[:60], "\n") + "\nthis is not a rule\n" + strings.Join(lines[60:], "\n"), ":61:"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".txt")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := run(t, "collect", "--node", "node1", "--iptables-save", p, "-f", filepath.Join(dir, name+".yaml"))
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr, p+c.wantLine) {
				t.Errorf("error does not name %s%s: %s", p, c.wantLine, stderr)
			}
		})
	}
}

func TestDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"version":   "apiVersion: svctrace.dev/v9\nkind: Snapshot\nnodes: []\n",
		"truncated": "apiVersion: svctrace.dev/v1alpha1\nkind: Snapshot\nnodes:\n- name: n1\n  dumps:\n  - collector: iptables-save\n    text: \"*nat\n",
		"empty":     "",
	} {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "drift", "--snapshot", p)
		if code != 2 || !strings.Contains(stderr, p) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the file", name, code, stderr)
		}
	}
}

func TestMissingService(t *testing.T) {
	_, stderr, code := run(t, "explain", "default/nope", "--snapshot", importSnapshot(t, ""))
	if code != 2 || !strings.Contains(stderr, "default/nope") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestGoldenExplainCart(t *testing.T) {
	snap := importSnapshot(t, "")
	for _, c := range []struct{ name, node string }{{"explain-shop-cart-node1.txt", "node1"}} {
		out, stderr, code := run(t, "explain", "shop/cart", "--snapshot", snap, "--node", c.node)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		golden(t, c.name, out)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestCollectAppend(t *testing.T) {
	snap := importSnapshot(t, "")
	for _, add := range [][]string{
		{"node1", "--iptables-save", fixture + "node1.iptables-save.txt"},
		{"node2", "--nft-json", fixture + "node2.nft.json"},
	} {
		node := add[0]
		args := append([]string{"collect", "--append", "--node", node, "--objects", fixture + "objects.yaml", "-f", snap}, add[1:]...)
		_, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("collect --append %s: exit %d: %s", node, code, stderr)
		}
	}
	out, stderr, code := run(t, "drift", "--snapshot", snap, "--all-nodes", "-o", "json")
	if code == 2 {
		t.Fatalf("drift --all-nodes: %s", stderr)
	}
	r := decodeDrift(t, out)
	if len(r.Nodes) != 2 || r.Nodes[0].Name != "node1" || r.Nodes[1].Name != "node2" {
		t.Errorf("nodes = %+v, want node1 (replaced, not doubled) and node2", r.Nodes)
	}
}
