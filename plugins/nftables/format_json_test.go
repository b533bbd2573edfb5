package nftables

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// TestRenderJSONRoundTrip: a ruleset written by RenderJSON reads back the
// same, for every capture of real kube-proxy in nftables mode.
func TestRenderJSONRoundTrip(t *testing.T) {
	for _, path := range []string{
		"../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.json",
		"../../testdata/kube-proxy-v1.33.13/two-nodes/node2.nft.json",
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rs := mustParse(t, path, data)
		text, err := RenderJSON(rs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("rendered", text)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		sameLines(t, "rendered", "parsed", canonical(back), canonical(rs))
	}
}

// TestRenderJSONRefuses: RenderJSON refuses what has no JSON form, rather
// than write a ruleset that would read back otherwise.
func TestRenderJSONRefuses(t *testing.T) {
	rs := &Ruleset{Tables: []*Table{{Family: "ip", Name: "t", Chains: []*Chain{{Name: "c",
		Rules: []*Rule{{Chain: "c", Stmts: []Stmt{&Limit{Text: "rate 5/second"}}}}}}}}}
	if _, err := RenderJSON(rs); err == nil {
		t.Fatal("a limit statement rendered without an error")
	}
}

// canonical lists a ruleset line by line, sets' elements sorted (nft
// sorts some, the kernel keeps its own order). The comments of tables and
// chains are left out: nft 1.0.6 does not put them in its JSON
// (TestReadKernelComments checks them).
func canonical(rs *Ruleset) []string {
	var out []string
	for _, t := range rs.Tables {
		out = append(out, fmt.Sprintf("table %s", t.ID()))
		for _, s := range t.Sets {
			out = append(out, fmt.Sprintf("  set %s map=%v type %v : %v flags %v timeout %d size %d comment %q",
				s.Name, s.IsMap, s.KeyType, s.DataType, s.Flags, s.Timeout, s.Size, s.Comment))
			var els []string
			for _, e := range s.Elements {
				els = append(els, "    "+e.String())
			}
			slices.Sort(els)
			out = append(out, els...)
		}
		for _, c := range t.Chains {
			out = append(out, fmt.Sprintf("  chain %s type %q hook %q prio %d policy %q", c.Name, c.Type, c.Hook, c.Prio, c.Policy))
			for _, r := range c.rules() {
				out = append(out, fmt.Sprintf("    [%d] %s", r.Handle, r.Text()))
			}
		}
		for _, c := range t.Counters {
			out = append(out, fmt.Sprintf("  counter %s", c.Name))
		}
		for _, o := range t.Objects {
			out = append(out, fmt.Sprintf("  %s %s", o.Kind, o.Name))
		}
	}
	return out
}

// sameLines reports the lines where got and want differ.
func sameLines(t *testing.T, gotName, wantName string, g, w []string) {
	t.Helper()
	if slices.Equal(g, w) {
		return
	}
	for i := range max(len(g), len(w)) {
		gl, wl := "(none)", "(none)"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\n %s: %s\n %s: %s", i, gotName, gl, wantName, wl)
		}
	}
}
