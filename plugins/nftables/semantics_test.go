package nftables

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// semantics is a hand-made ruleset exercising netfilter's order rather
// than kube-proxy's layout.
const semantics = `{"nftables": [
{"table": {"family": "inet", "name": "fw"}},
{"chain": {"family": "inet", "table": "fw", "name": "input", "type": "filter", "hook": "input", "prio": 10, "policy": "drop"}},
{"rule": {"family": "inet", "table": "fw", "chain": "input", "handle": 2, "expr": [
  {"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "lo"}}, {"accept": null}]}},
{"rule": {"family": "inet", "table": "fw", "chain": "input", "handle": 3, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 22}}, {"accept": null}]}},
{"table": {"family": "ip", "name": "a"}},
{"chain": {"family": "ip", "table": "a", "name": "raw", "type": "filter", "hook": "prerouting", "prio": -300, "policy": "accept"}},
{"chain": {"family": "ip", "table": "a", "name": "pre", "type": "filter", "hook": "prerouting", "prio": "mangle", "policy": "accept"}},
{"chain": {"family": "ip", "table": "a", "name": "nat2", "type": "nat", "hook": "prerouting", "prio": -90, "policy": "accept"}},
{"chain": {"family": "ip", "table": "a", "name": "nat1", "type": "nat", "hook": "prerouting", "prio": "dstnat", "policy": "accept"}},
{"chain": {"family": "ip", "table": "a", "name": "fwd", "type": "filter", "hook": "forward", "prio": 0, "policy": "accept"}},
{"rule": {"family": "ip", "table": "a", "chain": "raw", "handle": 4, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.0.0.2"}}, {"notrack": null}]}},
{"rule": {"family": "ip", "table": "a", "chain": "pre", "handle": 5, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"prefix": {"addr": "192.0.2.0", "len": 24}}}}, {"accept": null}]}},
{"rule": {"family": "ip", "table": "a", "chain": "pre", "handle": 6, "expr": [
  {"match": {"op": "!=", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"set": [{"prefix": {"addr": "10.0.0.0", "len": 8}}, {"prefix": {"addr": "192.168.0.0", "len": 16}}]}}},
  {"mangle": {"key": {"meta": {"key": "mark"}}, "value": {"|": [{"meta": {"key": "mark"}}, 16]}}}]}},
{"rule": {"family": "ip", "table": "a", "chain": "nat1", "handle": 7, "expr": [
  {"match": {"op": "in", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": {"set": ["10.0.0.1", "10.0.0.2"]}}},
  {"dnat": {"addr": "10.1.0.1", "port": 8080}}]}},
{"rule": {"family": "ip", "table": "a", "chain": "nat2", "handle": 8, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": {"set": ["10.0.0.1", "10.0.0.3"]}}},
  {"dnat": {"addr": "10.9.9.9"}}]}},
{"rule": {"family": "ip", "table": "a", "chain": "fwd", "handle": 9, "comment": "marked", "expr": [
  {"match": {"op": "!=", "left": {"&": [{"meta": {"key": "mark"}}, 16]}, "right": 0}}, {"drop": null}]}},
{"rule": {"family": "ip", "table": "a", "chain": "fwd", "handle": 10, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.5.5.5"}}, {"jump": {"target": "nowhere"}}]}},
{"rule": {"family": "ip", "table": "a", "chain": "fwd", "handle": 11, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.6.6.6"}},
  {"match": {"op": "==", "left": {"numgen": {"mode": "random", "mod": 4}}, "right": 0}}, {"drop": null}]}},
{"rule": {"family": "ip", "table": "a", "chain": "fwd", "handle": 12, "expr": [
  {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.7.7.7"}},
  {"vmap": {"key": {"payload": {"protocol": "tcp", "field": "dport"}}, "data": {"set": [[{"range": [1, 1024]}, {"accept": null}], [8080, {"drop": null}]]}}}]}}
]}`

func TestWalkSemantics(t *testing.T) {
	rs := mustParse(t, "semantics.json", []byte(semantics))
	w := NewPlane(rs, "IPv4").Walker(node2Env())
	fromNode := pkt("192.0.2.11", "127.0.0.1", "tcp", 23)
	fromNode.Entry = dataplane.Output
	cases := []struct {
		name              string
		pkt               dataplane.Packet
		verdicts, dnat    string
		reason, note, via string
	}{
		// Accept in "pre" skips its mark rule but not the later chains;
		// once nat1 (priority -100) DNATs, nat2 (-90) does not run.
		{name: "accept ends only its base chain", pkt: pkt("192.0.2.5", "10.0.0.1", "tcp", 80), verdicts: "ACCEPT", dnat: "10.1.0.1:8080"},
		{name: "a mark set before NAT drops in forward", pkt: pkt("198.18.0.1", "10.0.0.1", "tcp", 80), verdicts: "DROP", dnat: "10.1.0.1:8080", reason: "marked"},
		{name: "notrack: no NAT", pkt: pkt("192.0.2.5", "10.0.0.2", "tcp", 80), verdicts: "ACCEPT"},
		{name: "no DNAT in nat1: nat2 runs", pkt: pkt("192.0.2.5", "10.0.0.3", "tcp", 80), verdicts: "ACCEPT", dnat: "10.9.9.9:80"},
		{name: "inet input accepts ssh", pkt: pkt("192.0.2.5", "192.0.2.11", "tcp", 22), verdicts: "ACCEPT", note: "iifname not evaluated"},
		{name: "inet input policy drop", pkt: pkt("192.0.2.5", "192.0.2.11", "tcp", 23), verdicts: "DROP", reason: "policy drop of inet fw input"},
		{name: "loopback delivery from the node", pkt: fromNode, verdicts: "ACCEPT", via: "input"},
		{name: "jump to a missing chain", pkt: pkt("192.0.2.5", "10.5.5.5", "tcp", 80), verdicts: "MISSING"},
		{name: "numgen in a match", pkt: pkt("192.0.2.5", "10.6.6.6", "tcp", 80), verdicts: "DROP 0.25,ACCEPT 0.75"},
		{name: "anonymous vmap with a range", pkt: pkt("192.0.2.5", "10.7.7.7", "tcp", 80), verdicts: "ACCEPT"},
		{name: "anonymous vmap exact", pkt: pkt("192.0.2.5", "10.7.7.7", "tcp", 8080), verdicts: "DROP", reason: "ip a fwd: ip daddr 10.7.7.7 tcp dport vmap { 1-1024 : accept, 8080 : drop }"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			br := w.Walk(c.pkt)
			var vs []string
			for _, b := range br {
				v := string(b.Verdict)
				if len(br) > 1 {
					v += " " + fmtProb(b.Probability)
				}
				vs = append(vs, v)
				if b.DNAT != c.dnat {
					t.Errorf("DNAT %q, want %q\n%s", b.DNAT, c.dnat, hopsText(b))
				}
				if !strings.Contains(b.Reason, c.reason) {
					t.Errorf("reason %q, want %q", b.Reason, c.reason)
				}
				if c.note != "" && !strings.Contains(strings.Join(b.Notes, "\n"), c.note) {
					t.Errorf("notes %v lack %q", b.Notes, c.note)
				}
				if c.via != "" && !viaChain(b, c.via) {
					t.Errorf("no hop in %s\n%s", c.via, hopsText(b))
				}
				if b.Verdict == dataplane.Missing && b.Missing != "nowhere" {
					t.Errorf("missing %q", b.Missing)
				}
			}
			if got := strings.Join(vs, ","); got != c.verdicts {
				t.Errorf("verdicts %s, want %s", got, c.verdicts)
			}
		})
	}
	br := w.Walk(pkt("198.18.0.1", "10.0.0.1", "tcp", 80))
	if !hasPrefix(br[0].SourcePrefixes, "10.0.0.0/8") || !hasPrefix(br[0].SourcePrefixes, "192.168.0.0/16") || !hasPrefix(br[0].SourcePrefixes, "192.0.2.0/24") {
		t.Errorf("source prefixes %v", br[0].SourcePrefixes)
	}
}

func fmtProb(p float64) string {
	switch {
	case near(p, 0.25):
		return "0.25"
	case near(p, 0.75):
		return "0.75"
	}
	return "?"
}
