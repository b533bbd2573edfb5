package nftables

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

func TestParseCaptures(t *testing.T) {
	for _, path := range captures() {
		rs := mustParse(t, path, readCapture(t, path))
		if rs.Version != "1.0.6" || rs.SchemaVersion != 1 {
			t.Errorf("%s: metainfo %q %d", version(path), rs.Version, rs.SchemaVersion)
		}
		if len(rs.Tables) != 2 || rs.Tables[0].ID() != "ip kube-proxy" || rs.Tables[1].ID() != "ip6 kube-proxy" {
			t.Fatalf("%s: tables %v", version(path), rs.Tables)
		}
		if len(rs.Notes) != 0 {
			t.Errorf("%s: notes %v", version(path), rs.Notes)
		}
		kp := rs.Tables[0]
		c := kp.Chain("filter-prerouting-pre-dnat")
		if c == nil || !c.Base() || c.Type != "filter" || c.Hook != "prerouting" || c.Prio != -110 || c.Policy != "accept" {
			t.Errorf("%s: base chain %+v", version(path), c)
		}
		if c := kp.Chain("services"); c == nil || c.Base() || len(c.Rules) == 0 {
			t.Errorf("%s: regular chain services %+v", version(path), c)
		}
		m := kp.Set("no-endpoint-services")
		if m == nil || !m.IsMap || strings.Join(m.KeyType, ",") != "ipv4_addr,inet_proto,inet_service" || strings.Join(m.DataType, ",") != "verdict" {
			t.Fatalf("%s: map %+v", version(path), m)
		}
		var comments []string
		for _, el := range m.Elements {
			comments = append(comments, el.Comment)
		}
		if strings.Join(comments, ",") != "default/web-np:http,default/kubernetes:https" {
			t.Errorf("%s: element comments %v", version(path), comments)
		}
		aff := kp.Set(affCartHTTP21)
		if aff == nil || aff.Timeout != 10800 || !aff.HasFlag("timeout") || aff.Size != 65535 {
			t.Errorf("%s: affinity set %+v", version(path), aff)
		}
	}
}

// TestRuleText: rules render as nft prints them (compare node2.nft.txt).
func TestRuleText(t *testing.T) {
	for _, path := range captures() {
		rs := mustParse(t, path, readCapture(t, path))
		txt, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(txt), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, tb := range rs.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					if !lines[r.Text()] {
						t.Errorf("%s: %s %s: rule text %q is not a line of the text form", version(path), tb.ID(), c.Name, r.Text())
					}
				}
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	capture := readCapture(t, captures()[0])
	txt := readCapture(t, strings.TrimSuffix(captures()[0], ".json")+".txt")
	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"text form cut", txt[:bytes.Index(txt, []byte("chain services {"))], []string{"node2.nft", "line ", "input ends inside table ip kube-proxy (opened on line 1)"}},
		{"text form of iptables-nft", []byte("table ip nat {\n\tchain KUBE-SERVICES {\n\t\tcounter jump KUBE-NODEPORTS\n\t}\n}\n"),
			[]string{"node2.nft", "line 2, column 8", "these are iptables rules (iptables-nft backend) printed by nft; run `iptables-save` (and `ip6tables-save`) on the node and give that"}},
		{"text form after a prompt", []byte("root@node2:~# nft list ruleset\ntable ip kube-proxy {\n}\n"),
			[]string{"node2.nft", "line 1, column 1", "want a table"}},
		{"text form, bad element", []byte("table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.1 10.0.0.2 }\n\t}\n}\n"),
			[]string{"node2.nft", "line 4, column 25"}},
		{"truncated", capture[:len(capture)/2], []string{"node2.nft", "truncated"}},
		{"syntax", []byte("{\"nftables\": [\n{\"table\": }]}"), []string{"node2.nft", "line 2"}},
		{"empty", nil, []string{"empty input"}},
		{"no array", []byte(`{"foo": 1}`), []string{`no "nftables" array`}},
		{"trailing", []byte(`{"nftables": []} {}`), []string{"after the JSON document"}},
		{"expr not an array", []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": 5}}]}`),
			[]string{"nftables[0].rule.expr: want an array"}},
		{"match without right", []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": null}, {"match": {"op": "==", "left": {"meta": {"key": "mark"}}}}]}}]}`),
			[]string{"nftables[0].rule.expr[1].match", `missing "right"`}},
		{"bad operator", []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"match": {"op": "~", "left": 1, "right": 1}}]}}]}`),
			[]string{"nftables[0].rule.expr[0].match.op"}},
		{"two keys", []byte(`{"nftables": [{"table": {"family": "ip", "name": "t"}, "chain": {}}]}`),
			[]string{"nftables[0]: want an object with one key"}},
		{"numgen mod 0", []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"vmap": {"key": {"numgen": {"mode": "random", "mod": 0}}, "data": "@m"}}]}}]}`),
			[]string{"nftables[0].rule.expr[0].vmap.key.numgen.mod"}},
		{"map element not a pair", []byte(`{"nftables": [{"map": {"family": "ip", "table": "t", "name": "m", "type": "ipv4_addr", "map": "verdict", "elem": ["10.0.0.1"]}}]}`),
			[]string{"nftables[0].map.elem[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("node2.nft.json", c.data)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestUnknownExpression: an expression the parser does not know is kept,
// named in the notes with its position, rendered, and taken by the walk as
// not matching, with a note on the branch.
func TestUnknownExpression(t *testing.T) {
	for _, path := range captures() {
		pos := -1
		data := edit(t, readCapture(t, path), func(items []any) []any {
			for i, it := range items {
				r, ok := object(it, "rule", "services")
				if ok && strings.Contains(compact(r["expr"]), "@service-ips") {
					pos = i
					r["expr"] = append([]any{map[string]any{"frobnicate": map[string]any{"level": 3}}}, r["expr"].([]any)...)
				}
			}
			return items
		})
		rs := mustParse(t, "edited.json", data)
		p := NewPlane(rs, "IPv4")
		wantPath := "nftables[" + strconv.Itoa(pos) + "].rule.expr[0]"
		found := false
		for _, n := range p.Notes() {
			if strings.Contains(n, "edited.json") && strings.Contains(n, wantPath) && strings.Contains(n, "frobnicate") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: notes %v lack %s", version(path), p.Notes(), wantPath)
		}
		br := p.Walker(node2Env()).Walk(pkt("10.244.1.99", "10.96.94.233", "tcp", 80))
		if len(br) != 1 || br[0].DNAT != "" || len(br[0].Notes) == 0 || !strings.Contains(br[0].Notes[0], "frobnicate") {
			t.Errorf("%s: walk past an unknown statement: %+v", version(path), br)
		}
		if br[0].Verdict != dataplane.Reject {
			t.Errorf("%s: verdict %s, want the cluster-ips-check reject", version(path), br[0].Verdict)
		}
	}
	// An unknown expression inside a known statement.
	rs := mustParse(t, "x.json", []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 4,
		"expr": [{"match": {"op": "==", "left": {"osf": {"key": "name"}}, "right": "Linux"}}, {"drop": null}]}}]}`))
	if len(rs.Notes) != 2 || !strings.Contains(rs.Notes[1].Text, "nftables[0].rule.expr[0].match.left") {
		t.Errorf("notes %v", rs.Notes)
	}
	if got := rs.Tables[0].Chains[0].Rules[0].Text(); !strings.Contains(got, "osf") || !strings.HasSuffix(got, "drop") {
		t.Errorf("text %q", got)
	}
}

func TestPriorityNames(t *testing.T) {
	for in, want := range map[string]int{"dstnat": -100, "dstnat - 10": -110, "srcnat": 100, "filter + 5": 5, "raw": -300, "-7": -7} {
		got, err := priority(in, "p")
		if err != nil || got != want {
			t.Errorf("priority(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := priority("nonsense", "p"); err == nil {
		t.Error("no error for an unknown priority name")
	}
}
