package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// TestFlushFoldsItsConsequences: a flush of the nat table is one
// MissingJumpRule for the table; the frontends it leaves without rules,
// and a live UDP flow to a serving DNS endpoint that the rules no longer
// take, are its consequences, folded in and counted, not findings of
// their own (the lab's TestReleases saw nine such flows after its DNS
// traffic, each a StaleConntrack).
func TestFlushFoldsItsConsequences(t *testing.T) {
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("node1")
	for i := range ns.Dumps {
		d := &ns.Dumps[i]
		switch {
		case d.Collector == "iptables-save" && d.Backend == "nf_tables" && d.Family != "IPv6":
			var kept []string
			table := ""
			for _, l := range strings.Split(d.Text, "\n") {
				if strings.HasPrefix(l, "*") {
					table = l
				}
				if table == "*nat" && strings.HasPrefix(l, "-A ") {
					continue
				}
				kept = append(kept, l)
			}
			d.Text = strings.Join(kept, "\n")
		case d.Collector == snapshot.CollectorConntrack:
			d.Text += "ipv4     2 udp      17 29 src=10.244.1.50 dst=10.96.25.237 sport=41234 dport=53 src=10.244.2.11 dst=10.244.1.50 sport=5353 dport=41234 mark=0 use=1 id=1\n"
		}
	}
	rep, err := Drift(s, DriftOptions{Family: "IPv4", Nodes: []string{"node1"}})
	if err != nil {
		t.Fatal(err)
	}
	fs := rep.Findings
	if len(fs) != 1 || fs[0].Type != behavior.MissingJumpRule || !strings.Contains(fs[0].Observed, "nat table") {
		t.Fatalf("a flushed nat table: want one MissingJumpRule, got %+v", fs)
	}
	for _, want := range []string{"MissingFrontend for ", "StaleConntrack for 1 frontend of 1 Service"} {
		if !strings.Contains(fs[0].Message, want) {
			t.Errorf("the finding does not count %q among its consequences: %s", want, fs[0].Message)
		}
	}
}
