package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// TestOthersMasquerade: flannel's chain in POSTROUTING masquerades pod
// traffic that leaves the pod network (to a hostNetwork endpoint, to the
// API server's address), which kube-proxy's rules do not: no finding, a
// note naming the chain. The same MASQUERADE in one of kube-proxy's own
// chains is kube-proxy's drift, and is reported.
func TestOthersMasquerade(t *testing.T) {
	flannel := func(s string) string {
		s = strings.Replace(s, ":KUBE-POSTROUTING - [0:0]\n", ":KUBE-POSTROUTING - [0:0]\n:FLANNEL-POSTRTG - [0:0]\n", 1)
		return strings.Replace(s, "\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n",
			"\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n"+
				"-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG\n"+
				"-A FLANNEL-POSTRTG -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment \"flanneld masq\" -j RETURN\n"+
				"-A FLANNEL-POSTRTG -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment \"flanneld masq\" -j MASQUERADE --random-fully\n", 1)
	}
	rep := iptablesDriftOf(t, flannel)
	if len(rep.Findings) != 0 {
		t.Errorf("flannel's masquerade taken for kube-proxy's drift: %+v", rep.Findings)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "nat FLANNEL-POSTRTG, another component's chain, masquerades connections kube-proxy's rules do not (ClusterIP") {
		t.Errorf("no note on flannel's masquerade: %q", rep.Notes)
	}

	own := func(s string) string {
		return strings.Replace(s, "\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n",
			"\n-A KUBE-POSTROUTING -s 10.244.0.0/16 ! -d 10.244.0.0/16 -j MASQUERADE\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n", 1)
	}
	rep = iptablesDriftOf(t, own)
	n := 0
	for _, f := range rep.Findings {
		if f.Type == behavior.MasqueradeMismatch {
			n++
		}
	}
	if n == 0 {
		t.Errorf("a masquerade in kube-proxy's own chain is no finding: %+v", rep.Findings)
	}
}

// iptablesDriftOf is the drift of node1 of the lab's iptables capture after edit changed its
// iptables-save dump.
func iptablesDriftOf(t *testing.T, edit func(string) string) *DriftReport {
	t.Helper()
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Node("node1")
	for i := range ns.Dumps {
		if d := &ns.Dumps[i]; d.Collector == "iptables-save" && d.Backend == "nf_tables" {
			before := d.Text
			if d.Text = edit(before); d.Text == before {
				t.Fatal("the edit changed nothing")
			}
		}
	}
	rep, err := Drift(s, DriftOptions{Family: "IPv4", Nodes: []string{"node1"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
