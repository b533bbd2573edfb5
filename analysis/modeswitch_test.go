package analysis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// iptablesModeLeft is what kube-proxy's iptables mode leaves in the nat
// table when the node moves to nftables mode without its cleanup, as
// iptables-save (nf_tables backend) prints it.
const iptablesModeLeft = `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-ABCDEFGHIJKLMNOP - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.99.99/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABCDEFGHIJKLMNOP
COMMIT
`

// iptablesModeLeftNFT is the same table as nft -j lists it: iptables-nft
// writes it into nftables, where the nftables dump sees it too.
var iptablesModeLeftNFT = []string{
	`{"table": {"family": "ip", "name": "nat", "handle": 90}}`,
	`{"chain": {"family": "ip", "table": "nat", "name": "PREROUTING", "handle": 1, "type": "nat", "hook": "prerouting", "prio": -100, "policy": "accept"}}`,
	`{"chain": {"family": "ip", "table": "nat", "name": "KUBE-SERVICES", "handle": 2}}`,
	`{"chain": {"family": "ip", "table": "nat", "name": "KUBE-SVC-ABCDEFGHIJKLMNOP", "handle": 3}}`,
	`{"rule": {"family": "ip", "table": "nat", "chain": "PREROUTING", "handle": 4, "expr": [{"counter": {"packets": 0, "bytes": 0}}, {"jump": {"target": "KUBE-SERVICES"}}]}}`,
	`{"rule": {"family": "ip", "table": "nat", "chain": "KUBE-SERVICES", "handle": 5, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.96.99.99"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 80}}, {"counter": {"packets": 0, "bytes": 0}}, {"jump": {"target": "KUBE-SVC-ABCDEFGHIJKLMNOP"}}]}}`,
}

// TestModeSwitchLeftoversOnce: iptables mode's chains left in the nat table
// of iptables-nft on a node now in nftables mode are seen twice, by the
// iptables dump and by the nftables dump of the same kernel table; they
// are one LeftoverRules finding, not one per dump.
func TestModeSwitchLeftoversOnce(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Nodes[0].Dumps {
		d := &s.Nodes[0].Dumps[i]
		switch {
		case d.Collector == "iptables-save" && d.Backend == "nf_tables":
			d.Text = iptablesModeLeft
		case d.Collector == "nft-json":
			var doc struct {
				NFTables []json.RawMessage `json:"nftables"`
			}
			if err := json.Unmarshal([]byte(d.Text), &doc); err != nil {
				t.Fatal(err)
			}
			for _, o := range iptablesModeLeftNFT {
				doc.NFTables = append(doc.NFTables, json.RawMessage(o))
			}
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			d.Text = string(b)
		}
	}
	rep, err := Drift(s, DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	if fs := rep.Findings; len(fs) != 1 || fs[0].Type != behavior.LeftoverRules || !strings.Contains(fs[0].Observed, "table nat") {
		t.Errorf("iptables mode's nat chains left on an nftables node, in both dumps: want one LeftoverRules, got %+v", fs)
	}
	// Without the iptables dump, the nftables dump alone tells it.
	for i := range s.Nodes[0].Dumps {
		if d := &s.Nodes[0].Dumps[i]; d.Collector == "iptables-save" && d.Backend == "nf_tables" {
			s.Nodes[0].Dumps = append(s.Nodes[0].Dumps[:i], s.Nodes[0].Dumps[i+1:]...)
			break
		}
	}
	rep, err = Drift(s, DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	if fs := rep.Findings; len(fs) != 1 || fs[0].Type != behavior.LeftoverRules || !strings.Contains(fs[0].Observed, "ip nat") {
		t.Errorf("the same, from the nftables dump alone: want one LeftoverRules, got %+v", fs)
	}
}
