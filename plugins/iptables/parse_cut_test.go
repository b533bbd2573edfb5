package iptables

import (
	"os"
	"strings"
	"testing"
)

// TestCutTableAsExcerpt: the real capture cut in the middle of its nat
// table is refused as truncated (with the hint to give it as an excerpt),
// and read as an excerpt when the caller says it is one: the rules up to
// the cut are there, jumps to chains it declares resolve, and the Ruleset
// says where it was cut.
func TestCutTableAsExcerpt(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	cut := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "-A KUBE-SVC-") {
			cut = i + 1 // keep this rule, drop the rest
			break
		}
	}
	if cut < 0 {
		t.Fatal("no KUBE-SVC rule in the capture")
	}
	text := strings.Join(lines[:cut], "\n") + "\n"
	if _, err := ParseString("cut", text, ParseOptions{}); err == nil || !strings.Contains(err.Error(), "has no COMMIT") || !strings.Contains(err.Error(), "--excerpt") {
		t.Fatalf("cut dump without Excerpt: %v, want the truncation error with its hint", err)
	}
	rs, err := ParseString("cut", text, ParseOptions{Excerpt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rs.Excerpt, "is cut after line") {
		t.Errorf("Excerpt %q, want where it was cut", rs.Excerpt)
	}
	nat := rs.Tables["nat"]
	if nat == nil {
		t.Fatal("no nat table")
	}
	last := strings.Fields(lines[cut-1])
	c := nat.Chain(last[1])
	if c == nil || len(c.Rules()) == 0 {
		t.Fatalf("the last rule before the cut is not read: %q", lines[cut-1])
	}
	rules := c.Rules()
	if r := rules[len(rules)-1]; r.Raw != lines[cut-1] {
		t.Errorf("last rule %q, want %q", r.Raw, lines[cut-1])
	} else if jumpsToChain(r) && nat.Chain(r.Target) != nil && r.jump == nil {
		t.Errorf("jump to declared chain %s not resolved", r.Target)
	}
}

// TestHeadlessTailCommit: rules before any *table line that a COMMIT
// closes are the tail of a table whose head was cut off (dump 34 of the
// wild corpus is one): they are read into the inferred table, and the
// tables after them as usual.
func TestHeadlessTailCommit(t *testing.T) {
	text := `-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -m mark --mark 0x8000/0x8000 -j DROP
-A INPUT -j KUBE-FIREWALL
COMMIT
# Completed on Mon May 15 19:06:51 2017
*nat
:PREROUTING ACCEPT [0:0]
COMMIT
`
	rs, err := ParseString("tail", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := rs.Tables["filter"]
	if f == nil || f.Chain("KUBE-FIREWALL") == nil || len(f.Chain("INPUT").Rules()) != 1 {
		t.Fatalf("the tail is not in filter: %v", rs.TableOrder)
	}
	if rs.Tables["nat"] == nil || rs.Excerpt == "" {
		t.Errorf("tables %v, excerpt %q", rs.TableOrder, rs.Excerpt)
	}
	found := false
	for _, n := range rs.Notes {
		found = found || strings.Contains(n.Message, "starts inside a table")
	}
	if !found {
		t.Errorf("no note on the cut head: %v", rs.Notes)
	}
	// A COMMIT after a whole table and then headerless rules is still
	// an error: only the head of the input can be cut off.
	if _, err := ParseString("t", "*nat\nCOMMIT\n-A X -j DROP\nCOMMIT\n", ParseOptions{}); err == nil {
		t.Error("a COMMIT without a table after a whole table is accepted")
	}
}

// TestRedactedAddress: an address the author removed before publishing
// (wild dump 53: -s xxx.xxx.xxx.xxx/32) keeps its rule, noted, and the
// rule does not match; anything else that is no address is still an error.
func TestRedactedAddress(t *testing.T) {
	for _, red := range []string{"xxx.xxx.xxx.xxx/32", "x.x.x.x", "<ipv4-public-prefix>", "10.0.XXX.XXX/24", "REDACTED"} {
		rs, err := ParseString("r", "-A KUBE-FW-X -s "+red+" -m comment --comment \"ns/svc:http loadbalancer IP\" -j KUBE-SVC-X\n", ParseOptions{Table: "nat"})
		if err != nil {
			t.Errorf("%s: %v", red, err)
			continue
		}
		r := rs.Chain("nat", "KUBE-FW-X").Rules()[0]
		if r.Source == nil || r.Source.Redacted != red || r.Source.Prefix.IsValid() {
			t.Errorf("%s: source %+v", red, r.Source)
		}
		if len(rs.Notes) == 0 || !strings.Contains(rs.Notes[0].Message, "is redacted") {
			t.Errorf("%s: notes %v", red, rs.Notes)
		}
	}
	for _, bad := range []string{"10.0.0.300", "hostname", "xx"} {
		if _, err := ParseString("r", "-A X -s "+bad+" -j DROP\n", ParseOptions{Table: "nat"}); err == nil {
			t.Errorf("%s: accepted as an address", bad)
		}
	}
}
