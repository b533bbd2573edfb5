package nftables

import (
	"strings"
	"testing"
)

// TestParseUnreadableValues: a value of a known expression the walk could
// not read is an error naming the table, chain, rule handle and JSON
// position, in the real captures damaged one value at a time.
func TestParseUnreadableValues(t *testing.T) {
	for _, path := range captures() {
		capture := string(readCapture(t, path))
		for _, c := range []struct {
			name, old, new string
			want           []string
		}{
			{"DNAT address", `"addr": "10.244.0.20", "port": 8080`, `"addr": "10.244.0.300", "port": 8080`,
				[]string{"chain endpoint-", "rule handle ", ".rule.expr[", ".dnat.addr", `"10.244.0.300" is not an IP address`}},
			{"DNAT port", `"addr": "10.244.0.20", "port": 8080`, `"addr": "10.244.0.20", "port": 80800`,
				[]string{".dnat.port", `"80800" is not a port`}},
			{"set element", `"10.96.40.90"`, `"10.96.0.300"`,
				[]string{"table ip kube-proxy", "set cluster-ips", ".set.elem[", `"10.96.0.300" is not an IP address`}},
			{"map key port", `"198.51.100.7", "tcp", 53]`, `"198.51.100.7", "tcp", "5x3"]`,
				[]string{"map service-ips", ".map.elem[0][0].concat[2]", `"5x3" is not a port`}},
			{"IPv6 address in an ip table", `"10.96.40.90"`, `"fd00::5"`, []string{"is not an IPv4 address"}},
		} {
			t.Run(version(path)+" "+c.name, func(t *testing.T) {
				if !strings.Contains(capture, c.old) {
					t.Fatalf("capture lacks %s", c.old)
				}
				_, err := Parse("node2.nft.json", []byte(strings.Replace(capture, c.old, c.new, 1)))
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range append(c.want, "node2.nft.json") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			})
		}
	}
}

func TestParseMatchValues(t *testing.T) {
	rule := func(match string) []byte {
		return []byte(`{"nftables": [{"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 7, "expr": [` + match + `, {"drop": null}]}}]}`)
	}
	for _, c := range []struct {
		name, match string
		want        string // "" for no error
	}{
		{"address", `{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.96.0.300"}}`,
			`table ip t chain c rule handle 7: nftables[0].rule.expr[0].match.right: "10.96.0.300" is not an IP address`},
		{"port", `{"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": "8o"}}`,
			`match.right: "8o" is not a port`},
		{"prefix length", `{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"prefix": {"addr": "10.0.0.0", "len": 33}}}}`,
			"match.right.prefix.len: 33 is not a prefix length"},
		{"port range", `{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"range": [1, "x"]}}}`,
			`match.right.range[1]: "x" is not a port`},
		{"anonymous set", `{"match": {"op": "==", "left": {"concat": [{"payload": {"protocol": "ip", "field": "daddr"}}, {"meta": {"key": "l4proto"}}]}, "right": {"set": [{"concat": ["10.0.0.1", "tcpp"]}]}}}`,
			`match.right.set[0].concat[1]: "tcpp" is not a protocol`},
		{"readable values", `{"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": {"set": [80, "https", {"range": [1000, 2000]}]}}}`, ""},
		{"unknown field is not checked", `{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "eth0"}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.json", rule(c.match))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
