package analysis

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// ipvsDrift is the drift of the lab's ipvs node with its IPVS table
// edited.
func ipvsDrift(t *testing.T, edit func(string) string) []behavior.Finding {
	t.Helper()
	return ipvsDriftOf(t, "ipvsadm", edit)
}

// ipvsDriftOf is the drift of the lab's ipvs node with its dump of
// collector edited.
func ipvsDriftOf(t *testing.T, collector string, edit func(string) string) []behavior.Finding {
	t.Helper()
	s, err := snapshot.Load("../examples/lab-ipvs-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Nodes[0].Dumps {
		if d := &s.Nodes[0].Dumps[i]; d.Collector == collector && d.Family != "IPv6" {
			before := d.Text
			if d.Text = edit(before); d.Text == before {
				t.Fatal("the edit changed nothing")
			}
		}
	}
	rep, err := Drift(s, DriftOptions{Family: "IPv4"})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Findings
}

// TestIPVSWeight0: a real server at weight 0 is a finding only when its
// endpoint is ready (Weight0ReadyEndpoint, in the place of that endpoint
// missing); one draining, whose endpoint is gone, is none.
func TestIPVSWeight0(t *testing.T) {
	ready := "  -> 10.244.1.11:8080             Masq    1 "
	fs := ipvsDrift(t, func(s string) string {
		return strings.Replace(s, ready, "  -> 10.244.1.11:8080             Masq    0 ", 1)
	})
	if len(fs) != 1 || fs[0].Type != behavior.Weight0ReadyEndpoint || fs[0].Endpoint != "10.244.1.11:8080" || fs[0].Service != "default/web:http" {
		t.Errorf("a ready endpoint at weight 0: %+v", fs)
	}
	// kube-proxy drains an endpoint in every virtual server of its
	// Service: one finding for the endpoint, naming both frontends.
	fs = ipvsDrift(t, func(s string) string {
		return strings.ReplaceAll(s, "  -> 10.244.1.30:8080             Masq    1 ", "  -> 10.244.1.30:8080             Masq    0 ")
	})
	if len(fs) != 1 || fs[0].Type != behavior.Weight0ReadyEndpoint || fs[0].Service != "default/np:http" || len(fs[0].Frontends) != 2 {
		t.Errorf("a ready endpoint at weight 0 in both virtual servers of its Service: %+v", fs)
	}
	fs = ipvsDrift(t, func(s string) string {
		return strings.Replace(s, ready, "  -> 10.244.1.99:8080             Masq    0      3          0\n"+ready, 1)
	})
	if len(fs) != 0 {
		t.Errorf("a real server draining at weight 0: %+v", fs)
	}
}

// TestIPVSLeftovers: on a node in ipvs mode, the iptables chains ipvs mode
// keeps are no leftover, and a chain of iptables mode is, when a packet can
// enter it; one that nothing leads to acts on nothing and is not reported.
func TestIPVSLeftovers(t *testing.T) {
	fs := ipvsDriftOf(t, "iptables-save", func(s string) string {
		s = strings.Replace(s, ":KUBE-SERVICES - [0:0]\n", ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-ABCDEFGHIJKLMNOP - [0:0]\n", 1)
		return strings.Replace(s, "\n-A KUBE-SERVICES ", "\n-A KUBE-SERVICES -d 10.96.99.99/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABCDEFGHIJKLMNOP\n-A KUBE-SERVICES ", 1)
	})
	if len(fs) != 1 || fs[0].Type != behavior.LeftoverRules || !strings.Contains(fs[0].Observed, "1 KUBE chains") {
		t.Errorf("an iptables-mode chain on an ipvs node: %+v", fs)
	}
	fs = ipvsDriftOf(t, "iptables-save", func(s string) string {
		return strings.Replace(s, ":KUBE-SERVICES - [0:0]\n", ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-ABCDEFGHIJKLMNOP - [0:0]\n", 1)
	})
	if len(fs) != 0 {
		t.Errorf("an iptables-mode chain nothing leads to, on an ipvs node: %+v", fs)
	}
}
