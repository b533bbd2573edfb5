package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An imported conntrack -L -o extended dump with an entry to an endpoint
// that is gone gives one StaleConntrack naming the Service, the old
// backend and the client.
func TestConntrackImportDrift(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap.yaml")
	if _, stderr, code := run(t, "collect", "--node", "node1", "--objects", fixture+"objects.yaml",
		"--iptables-save", fixture+"node1.iptables-save.txt",
		"--conntrack", "../../testdata/conntrack/node1.conntrack-L-extended.txt", "-f", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	out, stderr, code := run(t, "drift", "--snapshot", snap, "-o", "json")
	if code != 1 {
		t.Fatalf("drift: exit %d, want 1: %s%s", code, out, stderr)
	}
	r := decodeDrift(t, out)
	if len(r.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", r.Findings)
	}
	f := r.Findings[0]
	if f.Type != "StaleConntrack" || f.Service != "shop/dns:dns" || !strings.Contains(f.Observed, "10.244.0.99:5353") ||
		!strings.Contains(f.Observed, "10.244.0.9:40053") {
		t.Errorf("finding = %+v", f)
	}

	out, _, code = run(t, "explain", "default/nginx", "--snapshot", snap)
	if code != 0 || !strings.Contains(out, "10.244.0.5:8080") || !strings.Contains(out, "1 live") {
		t.Errorf("explain shows no live flow on 10.244.0.5:8080 (exit %d):\n%s", code, out)
	}
	out, _, code = run(t, "reconcile", "conntrack", "--snapshot", snap)
	if code != 1 || !strings.Contains(out, "10.244.0.9:40053") || !strings.Contains(out, "udp 10.244.0.9:40053 -> 10.96.64.120:53 reply from 10.244.0.99:5353") {
		t.Errorf("reconcile conntrack (dry run): exit %d, want 1 listing the stale entry:\n%s", code, out)
	}
}
