package iptables

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// memoRules are pure chains of the shapes a memo must tell apart: a mark
// set, tested and cleared (kube-proxy's postrouting), states that depend
// on the branch's translation and masquerading, verdicts with reasons,
// RETURN from a jumped chain and a goto; and impure ones beside them (an
// address test, a mark that cannot be read).
const memoRules = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
:PURE-STATE - [0:0]
:PURE-GOTO - [0:0]
:IMPURE - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A OUTPUT -j KUBE-SERVICES
-A POSTROUTING -j PURE-STATE
-A POSTROUTING -j KUBE-POSTROUTING
-A POSTROUTING -g PURE-GOTO
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "masquerade" -j MASQUERADE --random-fully
-A PURE-STATE -m conntrack --ctstate DNAT -j MARK --or-mark 0x1
-A PURE-STATE -m conntrack --ctstate SNAT -j MARK --or-mark 0x2
-A PURE-GOTO -m mark --mark 0x1/0x1 -j IMPURE
-A PURE-GOTO -m mark --mark 0x2/0x2 -m comment --comment "dropped for its mark" -j DROP
-A IMPURE -s 10.244.1.1/32 -j DROP
-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-1
-A KUBE-SVC-A -j KUBE-SEP-2
-A KUBE-SEP-1 -s 10.244.1.1/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-1 -p tcp -m tcp -j DNAT --to-destination 10.244.1.1:8080
-A KUBE-SEP-2 -s 10.244.1.2/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-2 -p tcp -m tcp -j DNAT --to-destination 10.244.1.2:8080
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
:BY-PROTO - [0:0]
-A FORWARD -j KUBE-FORWARD
-A FORWARD -j BY-PROTO
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT
-A BY-PROTO -p udp -j ACCEPT
COMMIT
`

// TestMemoSameAnswers: walks that take pure chains' outcomes from the
// memo answer exactly as walks that evaluate them each time, on the
// shapes above, every captured dump and a generated node, for every
// frontend and an address that is none, from each kind of source, the
// memo cold and then warm.
func TestMemoSameAnswers(t *testing.T) {
	texts := map[string]string{"shapes": memoRules, "generated": snapshottest.IPTablesSave(6, 3)}
	for _, path := range ptFixtures(t) {
		texts[path] = string(ptRead(t, path))
	}
	env := &Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
	pure := 0
	for name, text := range texts {
		rs, err := ParseString(name, text, ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		memo, plain := NewWalker(rs, env), NewWalker(rs, env)
		plain.noMemo = true
		// Every frontend, and an address that is none (its packets are
		// not translated).
		fronts := append(discover(rs), behavior.Frontend{Key: behavior.Key{IP: "198.51.100.1", Port: 80, Protocol: "TCP"}})
		for _, f := range fronts {
			dst, err := netip.ParseAddr(f.Key.IP)
			if err != nil {
				dst = netip.MustParseAddr("192.0.2.10")
			}
			for _, src := range []string{"10.244.1.1", "10.244.1.2", "10.244.2.5", "192.0.2.10", "203.0.113.9"} {
				for _, entry := range []dataplane.Entry{dataplane.Prerouting, dataplane.Output} {
					p := Packet{Src: netip.MustParseAddr(src), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: entry}
					if f.Key.Protocol != "" {
						p.Protocol = strings.ToLower(f.Key.Protocol)
					}
					o := dataplane.WalkOptions{NoHops: true}
					want := plain.WalkWith(p, o)
					for pass := range 2 {
						if got := memo.WalkWith(p, o); !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: %v from %s (pass %d):\nmemo:  %+v\nplain: %+v", name, f.Key, src, pass, got, want)
						}
					}
				}
			}
		}
		for _, t := range rs.Tables {
			for _, c := range t.chains() {
				if w := c.worked.Load(); w != nil {
					if list := w.outcomes.Load(); list != nil {
						pure += len(*list)
					}
				}
			}
		}
	}
	if pure < 10 {
		t.Errorf("only %d pure chain outcomes kept: the memo was hardly used", pure)
	}
	rs, err := ParseString("shapes", memoRules, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for chain, want := range map[string]bool{"nat/KUBE-POSTROUTING": true, "nat/PURE-STATE": true, "nat/KUBE-MARK-MASQ": true,
		"nat/PURE-GOTO": false, "nat/IMPURE": false, "nat/KUBE-SVC-A": false, "filter/KUBE-FORWARD": true, "filter/BY-PROTO": false, "filter/FORWARD": false} {
		table, name, _ := strings.Cut(chain, "/")
		if got := rs.Chain(table, name).pure(); got != want {
			t.Errorf("%s: pure %v, want %v", chain, got, want)
		}
	}
}

// TestServiceChainsKeepNoWork: lean walks of every Service of a large
// lazy read work things out (purity, memoized outcomes) for the shared
// chains only: a per-Service chain, one of a node's hundred thousand,
// carries none of it.
func TestServiceChainsKeepNoWork(t *testing.T) {
	const services = 300
	rs, err := parseLazy("gen", snapshottest.IPTablesSave(services, 3), ParseOptions{Family: famIPv4})
	if err != nil {
		t.Fatal(err)
	}
	env := &dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
	w := (&Plane{Rules: rs}).Walker(env).(*Walker)
	for s := range services {
		dst := netip.MustParseAddr(snapshottest.IP(snapshottest.ClusterIPBase, s+10))
		for _, p := range []dataplane.Packet{
			{Src: netip.MustParseAddr("10.244.200.1"), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: 80, Entry: dataplane.Prerouting},
			{Src: netip.MustParseAddr("192.0.2.10"), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: 80, Entry: dataplane.Output},
		} {
			if br := w.WalkWith(p, dataplane.WalkOptions{NoHops: true}); len(br) == 0 || br[0].DNAT == "" {
				t.Fatalf("to %s: %+v, want a backend", dst, br)
			}
		}
	}
	worked, service := 0, 0
	for _, tb := range rs.Tables {
		for _, c := range tb.chains() {
			switch {
			case perServiceChain(c.Name):
				service++
				if c.worked.Load() != nil {
					t.Errorf("chain %s keeps a walk's work", c.Name)
				}
			case c.worked.Load() != nil:
				worked++
			}
		}
	}
	if service < services || worked == 0 {
		t.Errorf("%d per-Service chains, %d shared chains with a walk's work", service, worked)
	}
}
