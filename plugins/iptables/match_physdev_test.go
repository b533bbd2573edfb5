package iptables

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// TestPhysdevExternalIP: kube-proxy before 1.24 sends a packet to an
// external IP that is no node address on to the Service only when it did
// not cross a bridge port and did not come from the node ("-m physdev !
// --physdev-is-in -m addrtype ! --src-type LOCAL"): one from outside is
// forwarded (it crossed none), with a note on what was taken for a pod's;
// one the node sends is not.
func TestPhysdevExternalIP(t *testing.T) {
	text := `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-SVC-X - [0:0]
:KUBE-SEP-Y - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A OUTPUT -j KUBE-SERVICES
-A KUBE-SERVICES -d 203.0.113.7/32 -p tcp -m comment --comment "ns/web:http external IP" -m tcp --dport 80 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -d 203.0.113.7/32 -p tcp -m comment --comment "ns/web:http external IP" -m tcp --dport 80 -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j KUBE-SVC-X
-A KUBE-SERVICES -d 203.0.113.7/32 -p tcp -m comment --comment "ns/web:http external IP" -m tcp --dport 80 -m addrtype --dst-type LOCAL -j KUBE-SVC-X
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-SVC-X -m comment --comment "ns/web:http" -j KUBE-SEP-Y
-A KUBE-SEP-Y -p tcp -m comment --comment "ns/web:http" -m tcp -j DNAT --to-destination 10.244.1.5:8080
COMMIT
`
	rs, err := ParseString("old-layout", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
	out := NewWalker(rs, env).Walk(pkt("198.51.100.9", "203.0.113.7", 80, "tcp", dataplane.Prerouting))
	if len(out) != 1 || out[0].DNAT != "10.244.1.5:8080" {
		t.Fatalf("from outside: %+v, want DNAT to 10.244.1.5:8080", out)
	}
	if !strings.Contains(strings.Join(out[0].Notes, "|"), "taken as not crossing a bridge port") {
		t.Errorf("notes %q: no word on the bridge port", out[0].Notes)
	}
	out = NewWalker(rs, env).Walk(pkt("192.0.2.10", "203.0.113.7", 80, "tcp", dataplane.Output))
	if len(out) != 1 || out[0].DNAT != "" {
		t.Errorf("from the node: %+v, want no DNAT (its source is local, the address is not)", out)
	}
}
