package iptables

import (
	"strings"
	"testing"
)

// TestModeFromRules: the mode comes from what the rules show, and says
// when it is a guess or another mode's rules without that mode's state.
func TestModeFromRules(t *testing.T) {
	for _, tc := range []struct {
		name, text, mode, evidence string
	}{
		{"grep of KUBE-SERVICES (wild dump 31's shape)",
			`-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y` + "\n",
			"iptables", "mode iptables: KUBE-SERVICES jumps to KUBE-SVC-NPX46M4PTMTKRN6Y"},
		{"ipvs mode's iptables rules",
			"*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\nCOMMIT\n",
			"", "mode ipvs? KUBE-SERVICES matches ipvs mode's set KUBE-CLUSTER-IP"},
		{"the userspace proxier",
			"*nat\n:KUBE-PORTALS-CONTAINER - [0:0]\nCOMMIT\n",
			"userspace", "mode userspace: nat has KUBE-PORTALS-CONTAINER"},
		{"KUBE-SERVICES and nothing that tells",
			"*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n",
			"iptables", "mode iptables: a guess"},
	} {
		rs, err := ParseString(tc.name, tc.text, ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		in := Infer(rs)
		if in.Mode != tc.mode || !strings.HasPrefix(strings.Join(in.Evidence, "|"), tc.evidence) {
			t.Errorf("%s: mode %q %q, want %q %q...", tc.name, in.Mode, in.Evidence, tc.mode, tc.evidence)
		}
	}
}
