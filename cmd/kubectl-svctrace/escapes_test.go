package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlCharactersEscaped: a rule comment of the real capture that
// holds terminal controls (an OSC retitling the window, a clear screen,
// a colour, C1's one-byte CSI, a bidi override) is shown by explain,
// trace and drift with each control escaped, in text and wide output,
// and none reaches the terminal.
func TestControlCharactersEscaped(t *testing.T) {
	data, err := os.ReadFile(fixture + "node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	const comment = `"default/nginx:http cluster IP"`
	evil := "\"default/nginx:http cluster IP\x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b31m\u202e\""
	if !strings.Contains(string(data), comment) {
		t.Fatalf("no %s in the capture", comment)
	}
	dir := t.TempDir()
	dump := filepath.Join(dir, "node1.iptables-save.txt")
	if err := os.WriteFile(dump, []byte(strings.ReplaceAll(string(data), comment, evil)), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap.snap")
	if _, stderr, code := run(t, "collect", "--node", "node1", "--objects", fixture+"objects.yaml", "--iptables-save", dump, "-f", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	shown := `cluster IP\x1b]0;owned\x07\x1b[2J\x1b[31mRED\u009b31m\u202e"`
	for _, args := range [][]string{
		{"explain", "default/nginx"},
		{"explain", "default/nginx", "-o", "wide"},
		{"trace", "--node", "node1", "--src", "10.244.0.9", "--dst", "10.96.94.233:80"},
		{"drift", "-A"},
	} {
		out, stderr, code := run(t, append(args, "--snapshot", snap)...)
		if code > 1 {
			t.Fatalf("%s: exit %d: %s", args, code, stderr)
		}
		for _, c := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(out, c) || strings.Contains(stderr, c) {
				t.Errorf("%s: the output holds %q:\n%s", args, c, out)
			}
		}
		if args[0] != "drift" && !strings.Contains(out, shown) {
			t.Errorf("%s: the comment is not shown escaped (%s):\n%s", args, shown, out)
		}
	}
}
