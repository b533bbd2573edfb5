package analysis_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
)

// TestMemoIPVS: TestMemo's checks in ipvs mode, on the lab's node under
// real kube-proxy v1.36.3, where each virtual server is a part of the
// state: one virtual server changed walks its Service again, the
// connection counts traffic moves walk nothing, and an ipset or an
// address on kube-ipvs0, which any walk may read, walks every Service; the
// reports are those of checks without the memo.
func TestMemoIPVS(t *testing.T) {
	const path = "../examples/lab-ipvs-v1.36.3.snapshot.yaml"
	load := func(t *testing.T, edit func(collector, text string) string) *snapshot.Snapshot {
		t.Helper()
		s, err := snapshot.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.Nodes[0].Dumps {
			d := &s.Nodes[0].Dumps[i]
			d.Text = edit(d.Collector, d.Text)
		}
		return s
	}
	// replace edits the first occurrence of old in the dump of collector.
	replace := func(collector, old, new string) func(string, string) string {
		return func(c, text string) string {
			if c != collector {
				return text
			}
			return strings.Replace(text, old, new, 1)
		}
	}
	same := func(_, text string) string { return text }
	for _, tc := range []struct {
		name   string
		change func(collector, text string) string
		walked int // -1: every group
		drift  bool
	}{
		{name: "nothing changed", change: same, walked: 0},
		{name: "connections counted", change: replace("ipvsadm",
			"  -> 10.244.1.10:8080             Masq    1      0          0",
			"  -> 10.244.1.10:8080             Masq    1      7          3"), walked: 0},
		{name: "a real server of default/web at weight 0", change: replace("ipvsadm",
			"  -> 10.244.1.11:8080             Masq    1 ",
			"  -> 10.244.1.11:8080             Masq    0 "), walked: 1, drift: true},
		{name: "a virtual server gone", change: replace("ipvsadm",
			"TCP  10.96.50.15:80 rr\n  -> 10.244.1.41:8080             Masq    1      0          0\n", ""),
			walked: 1, drift: true},
		{name: "a NodePort gone from its ipset", change: replace("ipset", "add KUBE-NODE-PORT-TCP 30080\n", ""), walked: -1, drift: true},
		{name: "an address gone from kube-ipvs0", change: func(c, text string) string {
			if c != "kube-ipvs0" {
				return text
			}
			var out strings.Builder
			for l := range strings.Lines(text) {
				if !strings.Contains(l, " 10.96.50.12/32 ") {
					out.WriteString(l)
				}
			}
			return out.String()
		}, walked: -1, drift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := analysis.NewMemo()
			first := load(t, same)
			node := first.Nodes[0].Name
			check(t, first, memo)
			if reused, walked := memo.Counts(node, "IPv4"); reused != 0 || walked < 10 {
				t.Fatalf("first check: %d groups reused, %d walked", reused, walked)
			}
			next := load(t, tc.change)
			if changed := !reflect.DeepEqual(next.Nodes[0].Dumps, first.Nodes[0].Dumps); changed != (tc.name != "nothing changed") {
				t.Fatalf("the dumps changed: %v", changed)
			}
			got := check(t, next, memo)
			want := check(t, load(t, tc.change), nil)
			sameAsWithout(t, memo, node, got, want, tc.walked, tc.drift)
		})
	}
}
