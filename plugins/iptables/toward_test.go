package iptables

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// towardRules is one Service of four endpoints whose endpoint chains take
// each shape a narrowed walk must tell apart: kube-proxy's (a hairpin mark,
// then the DNAT), a DNAT for another protocol than the packet's, a rule
// that may accept before the DNAT, and a DNAT that matches on more than
// the protocol.
const towardRules = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
:KUBE-SEP-3 - [0:0]
:KUBE-SEP-4 - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A OUTPUT -j KUBE-SERVICES
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A -m statistic --mode random --probability 0.25 -j KUBE-SEP-1
-A KUBE-SVC-A -m statistic --mode random --probability 0.33333 -j KUBE-SEP-2
-A KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-3
-A KUBE-SVC-A -j KUBE-SEP-4
-A KUBE-SEP-1 -s 10.244.1.1/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-1 -p tcp -m comment --comment "ns/a:http" -m tcp -j DNAT --to-destination 10.244.1.1:8080
-A KUBE-SEP-2 -p udp -m udp -j DNAT --to-destination 10.244.1.2:8080
-A KUBE-SEP-3 -s 10.244.1.3/32 -j ACCEPT
-A KUBE-SEP-3 -p tcp -m tcp -j DNAT --to-destination 10.244.1.3:8080
-A KUBE-SEP-4 -p tcp -m tcp --sport 40000 -j DNAT --to-destination 10.244.1.4:8080
COMMIT
`

// TestTowardSameAnswers: a walk narrowed to one backend answers what the
// whole walk answers for it (the branches to it and the untranslated
// ones), whether the branches to the others are skipped or walked.
func TestTowardSameAnswers(t *testing.T) {
	for name, text := range map[string]string{"shapes": towardRules, "generated": snapshottest.IPTablesSave(4, 3)} {
		rs, err := ParseString(name, text, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := NewWalker(rs, &Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}})
		narrowed := 0
		for _, f := range discover(rs) {
			dst, err := netip.ParseAddr(f.Key.IP)
			if err != nil {
				continue
			}
			for _, src := range []string{"10.244.1.1", "10.244.1.3", "203.0.113.7"} {
				p := Packet{Src: netip.MustParseAddr(src), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: dataplane.Prerouting}
				full := w.Walk(p)
				for _, b := range full {
					if b.DNAT == "" {
						continue
					}
					ap := netip.MustParseAddrPort(b.DNAT)
					got := towardOutcomes(w.WalkWith(p, dataplane.WalkOptions{Toward: ap}), "")
					if want := towardOutcomes(full, b.DNAT); !slices.Equal(got, want) {
						t.Errorf("%s: %s toward %s:\n got %q\nwant %q", name, p, ap, got, want)
					}
					narrowed++
				}
			}
		}
		if narrowed < 6 {
			t.Errorf("%s: only %d narrowed walks", name, narrowed)
		}
	}
	rs, err := ParseString("shapes", towardRules, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for chain, want := range map[string]bool{"KUBE-SEP-1": true, "KUBE-SEP-2": true, "KUBE-SEP-3": false, "KUBE-SEP-4": false, "KUBE-SVC-A": false} {
		if got := rs.Chain("nat", chain).surelyTranslates(&state{walk: &walkState{}}) != nil; got != want {
			t.Errorf("%s: surely translates %v, want %v", chain, got, want)
		}
	}
}

func towardOutcomes(br []dataplane.Branch, toward string) []string {
	var out []string
	for _, b := range br {
		if toward != "" && b.DNAT != "" && b.DNAT != toward {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s dnat=%s masq=%v p=%.6f", b.Verdict, b.Reason, b.DNAT, b.Masquerade, b.Probability))
	}
	return out
}
