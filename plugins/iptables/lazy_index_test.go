package iptables

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestLineDest: a destination read off a line's text is the parsed
// rule's, on every rule of the parse fixtures and a generated node; what
// the text does not make certain is left to the parser.
func TestLineDest(t *testing.T) {
	certain := 0
	for name, text := range lazyInputs(t) {
		rs, err := ParseString(name, text, ParseOptions{})
		if err != nil {
			continue // the fixtures of errors
		}
		lines := strings.Split(text, "\n")
		for _, tname := range rs.TableOrder {
			tb := rs.Tables[tname]
			for _, cname := range tb.ChainOrder {
				for _, r := range tb.Chain(cname).Rules() {
					line := lines[r.Line-1]
					col := strings.Index(line, "-A ")
					if col < 0 {
						continue // iptables -S without -A? every fixture has it
					}
					a, ok := lineDest(line, col, rs.Family)
					if !ok {
						continue
					}
					certain++
					if r.Dest == nil || r.Dest.Negate || !r.Dest.Prefix.IsSingleIP() || r.Dest.Prefix.Addr() != a {
						t.Errorf("%s line %d: destination %s read off the text, the rule's is %+v:\n%s", name, r.Line, a, r.Dest, line)
					}
				}
			}
		}
	}
	if certain < 100 {
		t.Errorf("only %d destinations read off the text", certain)
	}
	for line, want := range map[string]string{
		`-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y`: "10.96.0.1",
		`-A KUBE-SERVICES --dst 10.96.0.2 -j X`:                            "10.96.0.2",
		`-A KUBE-SERVICES -s 10.0.0.0/8 -d 10.96.0.3/255.255.255.255 -j X`: "10.96.0.3",
		`-A KUBE-SERVICES ! -d 10.96.0.4/32 -j X`:                          "",
		`-A KUBE-SERVICES -d ! 10.96.0.5/32 -j X`:                          "",
		`-A KUBE-SERVICES -d 10.96.0.0/24 -j X`:                            "",
		`-A KUBE-SERVICES -m comment --comment "x" -d 10.96.0.6/32 -j X`:   "",
		`-A KUBE-SERVICES -i "eth0" -d 10.96.0.7/32 -j X`:                  "",
		`-A KUBE-SERVICES -d "10.96.0.8/32" -j X`:                          "",
		`-A KUBE-SERVICES -d fd00::1/128 -j X`:                             "",
		`-A KUBE-SERVICES -d`:                                              "",
		`-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`:  "",
		`-A KUBE-SERVICES -p tcp -m tcp --dport 80 -d 10.96.0.9/32 -j X`:   "",
		"-A KUBE-SERVICES\t-d\t10.96.0.10/32 -j X":                         "10.96.0.10",
		`[0:0] -A KUBE-SERVICES -d 10.96.0.11/32 -j X`:                     "10.96.0.11",
	} {
		col := strings.Index(line, "-A")
		a, ok := lineDest(line, col, famIPv4)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != want {
			t.Errorf("%s: destination %q, want %q", line, got, want)
		}
	}
}

// TestLazyIndex: walks through a lazy read take a long chain's candidates
// off its lines' text and parse only those: the same branches as a full
// read's walks, with a few of the chain's rules parsed.
func TestLazyIndex(t *testing.T) {
	text := snapshottest.IPTablesSave(300, 3)
	full, err := ParseString("gen", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := parseLazy("gen", text, ParseOptions{Family: famIPv4})
	if err != nil {
		t.Fatal(err)
	}
	env := &dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
	fw, lw := (&Plane{Rules: full}).Walker(env), (&Plane{Rules: lazy}).Walker(env)
	for _, s := range []int{0, 7, 150, 299} {
		dst := netip.MustParseAddr(snapshottest.IP(snapshottest.ClusterIPBase, s+10))
		for _, p := range []dataplane.Packet{
			{Src: netip.MustParseAddr("10.244.200.1"), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: 80, Entry: dataplane.Prerouting},
			{Src: netip.MustParseAddr("192.0.2.10"), Dst: dst, Protocol: "tcp", SrcPort: 40000, DstPort: 80, Entry: dataplane.Output},
		} {
			if got, want := lw.Walk(p), fw.Walk(p); !reflect.DeepEqual(got, want) {
				t.Errorf("to %s from %s: the lazy read's walk differs:\n got %+v\nwant %+v", dst, p.Src, got, want)
			}
		}
	}
	services := lazy.Chain("nat", "KUBE-SERVICES")
	work := services.worked.Load()
	if work == nil || work.lidx == nil || services.lazy.parsed.Load() {
		t.Fatal("KUBE-SERVICES was parsed whole, not indexed")
	}
	parsed := 0
	for _, r := range work.lidx.rules {
		if r != nil {
			parsed++
		}
	}
	if n := services.Len(); parsed == 0 || parsed > n/10 {
		t.Errorf("%d of KUBE-SERVICES' %d rules parsed for four destinations", parsed, n)
	}
	// The rest is there for whoever asks for the chain whole.
	if got, want := len(services.Rules()), len(full.Chain("nat", "KUBE-SERVICES").Rules()); got != want {
		t.Errorf("KUBE-SERVICES has %d rules, the full read %d", got, want)
	}
}

// TestLazyIndexError: a candidate that does not parse fails the read, as
// parsing the chain whole does, and no rule after it is walked.
func TestLazyIndexError(t *testing.T) {
	text := snapshottest.IPTablesSave(40, 2)
	dst := snapshottest.IP(snapshottest.ClusterIPBase, 20+10)
	text = strings.Replace(text, "-A KUBE-SERVICES -d "+dst+"/32 -p tcp", "-A KUBE-SERVICES -d "+dst+"/32 -p tcp --bogus 1", 1)
	lazy, err := parseLazy("gen", text, ParseOptions{Family: famIPv4})
	if err != nil {
		t.Fatal(err)
	}
	_, want := ParseString("gen", text, ParseOptions{})
	if want == nil {
		t.Fatal("the full read accepted the broken rule")
	}
	w := (&Plane{Rules: lazy}).Walker(&dataplane.Env{})
	w.Walk(dataplane.Packet{Src: netip.MustParseAddr("10.244.200.1"), Dst: netip.MustParseAddr(dst), Protocol: "tcp", SrcPort: 1, DstPort: 80, Entry: dataplane.Prerouting})
	if err := lazy.Err(); err == nil || err.Error() != want.Error() {
		t.Errorf("Err() = %v, want %v", err, want)
	}
}
