package nftables

import (
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// FuzzParse: no input makes Parse, or anything done with what it returns,
// panic.
func FuzzParse(f *testing.F) {
	for _, path := range captures() {
		f.Add(readCapture(f, path))
	}
	f.Add([]byte(`{"nftables": [{"metainfo": {"version": "1.0.6"}}]}`))
	f.Add([]byte(`{"nftables": [{"chain": {"family": "ip", "table": "t", "name": "c", "type": "nat", "hook": "prerouting", "prio": "dstnat - 10"}},
		{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": ["new", "established"]}},
		{"dnat": {"family": "ip", "addr": {"map": {"key": {"numgen": {"mode": "random", "mod": 2}}, "data": {"set": [[0, {"concat": ["10.0.0.1", 80]}]]}}}}}]}}]}`))
	f.Add([]byte(`{"nftables": [{"set": {"family": "inet", "table": "f", "name": "s", "type": ["ipv4_addr", "inet_service"], "flags": ["interval"],
		"elem": [{"concat": [{"prefix": {"addr": "10.0.0.0", "len": 8}}, {"range": [1, 1024]}]}, {"elem": {"val": {"concat": ["1.2.3.4", 53]}, "timeout": 5, "comment": "x"}}]}},
		{"rule": {"family": "inet", "table": "f", "chain": "c", "expr": [{"match": {"op": "==", "left": {"concat": [{"payload": {"protocol": "ip", "field": "saddr"}}, {"payload": {"protocol": "th", "field": "dport"}}]}, "right": "@s"}}, {"jump": {"target": "nowhere"}}]}}]}`))
	f.Add([]byte("table ip kube-proxy {\n}\n"))
	f.Add([]byte(`{"nftables": [{"map": {"family": "ip", "table": "t", "name": "m", "type": ["ipv4_addr", "inet_service"], "map": ["ipv4_addr", "inet_service"],
		"elem": [[{"concat": ["10.96.0.300", 80]}, {"concat": ["10.0.0.1", "8o"]}]]}},
		{"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 3, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": {"prefix": {"addr": "10.0.0.0", "len": 40}}}},
		{"dnat": {"addr": "10.0.0.300", "port": 70000}}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for _, tb := range rs.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					_ = r.Text()
				}
			}
			for _, s := range tb.Sets {
				for _, el := range s.Elements {
					_ = el.String()
				}
			}
		}
		for _, fam := range []string{"IPv4", "IPv6"} {
			p := NewPlane(rs, fam)
			_ = p.Frontends()
			_ = p.Checks("n", "")
			_ = p.Checks("n", "iptables")
			_ = p.Infer()
			_ = p.Notes()
			w := p.Walker(node2Env("affinity-x"))
			for _, pk := range []dataplane.Packet{
				pkt("10.244.1.99", "10.96.94.233", "tcp", 80),
				pkt("203.0.113.9", "192.0.2.11", "udp", 30080),
				pkt("fd00::1", "fd00::2", "sctp", 80),
			} {
				_ = w.Walk(pk)
				pk.Entry = dataplane.Output
				_ = w.Walk(pk)
			}
		}
	})
}
