package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// TestSplitBrainReadsBothCopies: with kube-proxy's rules in both iptables
// backends, the BackendSplitBrain finding says how the kernel picks the
// copy that answers, and what the other copy would give: here the legacy
// copy (walked) is as kube-proxy wrote it, and the nf_tables copy sends
// one endpoint's share elsewhere.
func TestSplitBrainReadsBothCopies(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("node1")
	var nft string
	for _, d := range ns.Dumps {
		if d.Collector == "iptables-save" && d.Backend == "nf_tables" {
			nft = d.Text
		}
	}
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		if d.Collector != "iptables-save" {
			continue
		}
		switch d.Backend {
		case "legacy":
			d.Text = nft
		case "nf_tables":
			stale := strings.Replace(nft, "--to-destination 10.244.1.11:8080", "--to-destination 10.244.1.99:8080", 1)
			if stale == nft {
				t.Fatal("the edit changed nothing")
			}
			d.Text = stale
		}
	}
	rep, err := Drift(s, DriftOptions{Family: "IPv4", Nodes: []string{"node1"}})
	if err != nil {
		t.Fatal(err)
	}
	var split *behavior.Finding
	for i, f := range rep.Findings {
		if f.Type == behavior.BackendSplitBrain {
			split = &rep.Findings[i]
		}
	}
	if split == nil || len(rep.Findings) != 1 {
		t.Fatalf("want the one BackendSplitBrain of the walked copy, got %+v", rep.Findings)
	}
	for _, want := range []string{"registered first", "were the nf_tables copy to answer, its rules would give", "StaleEndpoint"} {
		if !strings.Contains(split.Message, want) {
			t.Errorf("the finding lacks %q: %s", want, split.Message)
		}
	}
}
