package iptables

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// grepExcerpt is what `iptables-save | grep PATTERN` of a capture gives:
// the matching rule lines, without headers, chain declarations or COMMIT.
func grepExcerpt(t *testing.T, path, pattern string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, pattern) && strings.HasPrefix(l, "-A ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestExcerptAssumesFixedChains: a grep of one Service from a capture of
// kube-proxy v1.36.3 jumps to KUBE-MARK-MASQ and relies on
// KUBE-POSTROUTING, neither of which it holds. The walk assumes them as
// kube-proxy writes them, and says so, instead of ending the branch at
// the missing chain: the node's own connection is forwarded to the
// Service's three backends, masqueraded (as on the whole capture).
func TestExcerptAssumesFixedChains(t *testing.T) {
	const capture = "../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt"
	text := grepExcerpt(t, capture, "default/nginx:http")
	rs, err := ParseString("excerpt", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole := loadFixture(t)
	for _, entry := range []struct {
		src   string
		entry dataplane.Entry
	}{{"192.0.2.10", dataplane.Output}, {"10.244.0.9", dataplane.Prerouting}, {"198.18.0.1", dataplane.Prerouting}} {
		p := pkt(entry.src, "10.96.94.233", 80, "tcp", entry.entry)
		got, want := map[string]float64{}, map[string]float64{}
		var notes []string
		for _, b := range NewWalker(rs, node1).Walk(p) {
			got[summary(b)] += b.Probability
			notes = append(notes, b.Notes...)
		}
		for _, b := range NewWalker(whole, node1).Walk(p) {
			want[summary(b)] += b.Probability
		}
		if len(got) != len(want) {
			t.Errorf("%s: excerpt %v, whole dump %v", p, got, want)
		}
		for k, v := range want {
			if d := got[k] - v; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: excerpt %v, whole dump %v", p, got, want)
				break
			}
		}
		if got["dnat 10.244.0.5:8080 masq"] > 0 && !slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, "nat chain KUBE-MARK-MASQ is not in the dump: assumed")
		}) {
			t.Errorf("%s: masqueraded, with no note that KUBE-MARK-MASQ was assumed: %q", p, notes)
		}
	}
	// A whole dump assumes nothing.
	for _, b := range NewWalker(whole, node1).Walk(pkt("192.0.2.10", "10.96.94.233", 80, "tcp", dataplane.Output)) {
		for _, n := range b.Notes {
			if strings.Contains(n, "assumed") {
				t.Errorf("whole dump: %q", n)
			}
		}
	}
}
