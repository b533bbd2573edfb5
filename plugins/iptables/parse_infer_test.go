package iptables

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseHeaderless checks where headerless lines land and the notes
// that say why.
func TestParseHeaderless(t *testing.T) {
	for _, c := range []struct {
		name, text string
		// placed maps "table/chain" to its number of rules.
		placed map[string]int
		notes  []string
	}{
		{"iptables -t nat -S", `-P PREROUTING ACCEPT
-P INPUT ACCEPT
-P OUTPUT ACCEPT
-P POSTROUTING ACCEPT
-N KUBE-SERVICES
-N KUBE-SVC-AAAA
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-SVC-AAAA
`, map[string]int{"nat/PREROUTING": 1, "nat/INPUT": 0, "nat/OUTPUT": 1, "nat/POSTROUTING": 0, "nat/KUBE-SERVICES": 1, "nat/KUBE-SVC-AAAA": 0},
			[]string{"no table headers: rules placed in table nat, inferred from chain names PREROUTING, POSTROUTING, KUBE-SVC-*; jumps to KUBE-SVC-*; the rest of the file (chains INPUT, OUTPUT, KUBE-SERVICES) (3 rules)"}},
		{"iptables -t filter -S", `-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N KUBE-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j REJECT --reject-with icmp-port-unreachable
`, map[string]int{"filter/INPUT": 0, "filter/FORWARD": 0, "filter/OUTPUT": 1, "filter/KUBE-SERVICES": 1},
			[]string{"table filter, inferred from chain names FORWARD; targets REJECT; the rest of the file (chains INPUT, OUTPUT, KUBE-SERVICES)"}},
		{"nat and filter pasted together", `-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -j REJECT
-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -j KUBE-SVC-BBBB
-A KUBE-NODEPORTS -p tcp -m tcp --dport 30237 -j ACCEPT
-A KUBE-NODEPORTS -p tcp -m tcp --dport 30080 -j KUBE-EXT-CCCC
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SERVICES -j RETURN
-A KUBE-SEP-DDDD -p tcp -j DNAT --to-destination 10.244.0.5:80
`, map[string]int{"filter/KUBE-SERVICES": 1, "filter/KUBE-NODEPORTS": 1, "nat/KUBE-SERVICES": 3, "nat/KUBE-NODEPORTS": 1, "nat/KUBE-SEP-DDDD": 1},
			[]string{"table filter, inferred from targets REJECT, ACCEPT (2 rules)",
				"table nat, inferred from chain names KUBE-SEP-*; jumps to KUBE-SVC-*, KUBE-EXT-*, KUBE-NODEPORTS; the rest of the file (chains KUBE-SERVICES) (5 rules)"}},
		{"filter chains by name", `-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-PROXY-FIREWALL -d 198.51.100.50/32 -j DROP
-A INPUT -j KUBE-FIREWALL
`, map[string]int{"filter/KUBE-FORWARD": 1, "filter/KUBE-PROXY-FIREWALL": 1, "filter/INPUT": 1},
			[]string{"table filter, inferred from chain names KUBE-FORWARD, KUBE-PROXY-FIREWALL; jumps to KUBE-FIREWALL (3 rules)"}},
		{"INPUT alone is filter", "-A INPUT -i lo -j ACCEPT\n", map[string]int{"filter/INPUT": 1},
			[]string{"table filter, inferred from chain names INPUT (1 rules)"}},
		{"a chain's targets decide", "-A MY-CHAIN -j ACCEPT\n-A MY-CHAIN -p udp -j SNAT --to-source 1.2.3.4\n", map[string]int{"nat/MY-CHAIN": 2},
			[]string{"table nat, inferred from targets SNAT (2 rules)"}},
		{"nothing to go on", "-N FOO\n-A FOO -j ACCEPT\n", map[string]int{"nat/FOO": 1},
			[]string{"table nat, inferred from nothing: chains FOO give no hint, nat assumed (1 rules)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := ptParse(t, c.text, ParseOptions{})
			got := map[string]int{}
			for _, tn := range rs.TableOrder {
				tb := rs.Tables[tn]
				if len(tb.ChainOrder) != len(tb.Chains) {
					t.Errorf("%s: ChainOrder %v", tn, tb.ChainOrder)
				}
				for _, cn := range tb.ChainOrder {
					ch := tb.Chains[cn]
					got[tn+"/"+cn] = len(ch.Rules())
					for _, r := range ch.Rules() {
						if r.Table != tn || r.Chain != cn {
							t.Errorf("rule %s filed under %s/%s", r.Ref(), tn, cn)
						}
					}
				}
			}
			if !reflect.DeepEqual(got, c.placed) {
				t.Errorf("placed %v, want %v", got, c.placed)
			}
			if len(rs.Notes) != len(c.notes) {
				t.Fatalf("notes %q, want %d", rs.Notes, len(c.notes))
			}
			for i, n := range rs.Notes {
				if !strings.Contains(n.Message, c.notes[i]) || n.Line != 0 {
					t.Errorf("note %q,\nwant it to contain %q", n.Message, c.notes[i])
				}
			}
		})
	}
}

func TestParseHeaderlessDeclarations(t *testing.T) {
	rs := ptParse(t, "-P INPUT DROP\n-N KUBE-SVC-A\n-N KUBE-SVC-A\n-A KUBE-SVC-A -j KUBE-SEP-B\n", ParseOptions{})
	in, svc := rs.Chain("nat", "INPUT"), rs.Chain("nat", "KUBE-SVC-A")
	if in == nil || in.Policy != "DROP" || !in.Builtin || in.Line != 1 {
		t.Errorf("INPUT = %+v", in)
	}
	if svc == nil || svc.Policy != "-" || svc.Builtin || svc.Line != 2 || len(svc.Rules()) != 1 {
		t.Errorf("KUBE-SVC-A = %+v", svc)
	}
	if rs.Chain("nat", "KUBE-SEP-B") != nil {
		t.Error("a jump target with no rules of its own must not be created")
	}
}

// TestParseRulesSlices checks that Chain.Rules and option slices, which
// share arrays, can be appended to without clobbering their neighbours.
func TestParseRulesSlices(t *testing.T) {
	rs := ptParse(t, "*nat\n:A - [0:0]\n:B - [0:0]\n-A A -m comment --comment x -j RETURN\n"+
		"-A B -m comment --comment y -j RETURN\n-A A -j ACCEPT\nCOMMIT\n", ParseOptions{})
	a, b := rs.Chain("nat", "A"), rs.Chain("nat", "B")
	if len(a.Rules()) != 2 || a.Rules()[1].Target != "ACCEPT" || len(b.Rules()) != 1 {
		t.Fatalf("A %v B %v", a.Rules(), b.Rules())
	}
	b0 := b.Rules()[0]
	_ = append(rs.Chain("nat", "A").Rules()[:1:1], &Rule{Target: "X"})
	_ = append(a.Rules(), &Rule{Target: "X"})
	_ = append(a.Rules()[0].Matches[0].Options[0].Args, "z")
	_ = append(a.Rules()[0].Matches, Match{Module: "z"})
	if b.Rules()[0] != b0 || a.Rules()[1].Target != "ACCEPT" || b0.Comment() != "y" {
		t.Error("appending to one chain's rules changed another's")
	}
}
