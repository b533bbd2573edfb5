package iptables

import (
	"strings"
	"testing"
)

// TestModeLeftoversInert: what kube-proxy v1.32 in nftables mode leaves in
// iptables after iptables mode ran (its KUBE-PROXY-CANARY chains, an
// unreferenced KUBE-MARK-MASQ; the kubelet's KUBE-FIREWALL is no
// leftover) acts on no packet: a note per table, no finding. Once a
// built-in chain leads to a leftover chain it acts, and is reported.
// kube-router's network policy chains (k3s) share the KUBE- prefix but are
// no chains of kube-proxy.
func TestModeLeftoversInert(t *testing.T) {
	dump := `*mangle
:PREROUTING ACCEPT [0:0]
:KUBE-PROXY-CANARY - [0:0]
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
COMMIT
*filter
:INPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-NWPLCY-DEFAULT - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-ROUTER-INPUT - [0:0]
-A INPUT -m comment --comment "kube-router netpol - 4IA2OSFRMVNDXBVV" -j KUBE-ROUTER-INPUT
-A INPUT -j KUBE-FIREWALL
-A KUBE-NWPLCY-DEFAULT -m comment --comment "rule to mark traffic matching a network policy" -j MARK --set-xmark 0x10000/0x10000
-A KUBE-ROUTER-INPUT -d 10.43.0.0/16 -m comment --comment "allow traffic to primary/secondary cluster IP range - EMMR4XSKDSUXPUTX" -j RETURN
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
`
	rs, err := ParseString("inert", dump, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs, inert := ModeLeftovers(rs, "n1", "nf_tables", "nftables")
	if len(fs) != 0 || len(inert) != 3 {
		t.Fatalf("findings %+v, notes %q; want none and one note per table", fs, inert)
	}
	if !strings.Contains(inert[1], "table nat") || !strings.Contains(inert[1], "(KUBE-MARK-MASQ, KUBE-PROXY-CANARY)") {
		t.Errorf("nat's note: %q", inert[1])
	}

	acting := strings.Replace(dump, ":KUBE-PROXY-CANARY - [0:0]\n-A KUBE-MARK-MASQ", ":KUBE-PROXY-CANARY - [0:0]\n-A POSTROUTING -j KUBE-MARK-MASQ\n-A KUBE-MARK-MASQ", 1)
	rs, err = ParseString("acting", acting, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs, inert = ModeLeftovers(rs, "n1", "nf_tables", "nftables")
	if len(fs) != 1 || !strings.Contains(fs[0].Observed, "table nat: 2 KUBE chains with 1 rules") || len(inert) != 2 {
		t.Errorf("findings %+v, notes %q; want nat's leftovers reported and the two other tables noted", fs, inert)
	}

	// An excerpt may leave out the jump to a chain: its chains count as acting.
	rs, err = ParseString("excerpt", dump, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs.Excerpt = "a grep of the dump"
	if fs, _ = ModeLeftovers(rs, "n1", "nf_tables", "nftables"); len(fs) != 3 {
		t.Errorf("an excerpt's leftovers: %+v, want one per table", fs)
	}
}
