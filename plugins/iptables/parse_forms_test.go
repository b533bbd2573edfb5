package iptables

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseRuleForms checks single rules in the many spellings iptables
// accepts; each input is wrapped in a nat table.
func TestParseRuleForms(t *testing.T) {
	for _, c := range []struct {
		name, rule string
		check      func(t *testing.T, r *Rule)
	}{
		{"old negation form", `-A X -s ! 10.0.0.0/8 -p ! udp -i ! eth0 -j ACCEPT`, func(t *testing.T, r *Rule) {
			if !r.Source.Negate || !r.Protocol.Negate || r.Protocol.Name != "udp" || !r.InIface.Negate || r.InIface.Name != "eth0" {
				t.Errorf("%+v %+v %+v", r.Source, r.Protocol, r.InIface)
			}
		}},
		{"dotted mask and masking", `-A X -d 10.0.0.0/255.255.255.0 -s 10.1.2.3/8 -j ACCEPT`, func(t *testing.T, r *Rule) {
			if r.Dest.Prefix.String() != "10.0.0.0/24" || r.Source.Prefix.String() != "10.0.0.0/8" {
				t.Errorf("%v %v", r.Dest.Prefix, r.Source.Prefix)
			}
		}},
		{"long generic options", `-A X --source 1.2.3.4 --destination 5.6.7.0/24 --in-interface veth+ --out-interface lo --protocol TCP --jump DROP`, func(t *testing.T, r *Rule) {
			if r.Source.Prefix.String() != "1.2.3.4/32" || r.Dest.Prefix.String() != "5.6.7.0/24" || r.InIface.Name != "veth+" ||
				r.OutIface.Name != "lo" || r.Protocol.Name != "tcp" || r.Target != "DROP" {
				t.Errorf("%+v", r)
			}
		}},
		{"goto and fragments", "-A X ! -f -g KUBE-SVC-ABC\n:KUBE-SVC-ABC - [0:0]", func(t *testing.T, r *Rule) {
			if r.Fragment == nil || *r.Fragment || !r.Goto || r.Target != "KUBE-SVC-ABC" {
				t.Errorf("%+v", r)
			}
		}},
		{"quote escapes", `-A X -m comment --comment "say \"hi\" \\ ok" -m comment --comment a"b c"d -j ACCEPT`, func(t *testing.T, r *Rule) {
			if r.Comment() != `say "hi" \ ok` || r.Matches[1].Options[0].Args[0] != "ab cd" {
				t.Errorf("%q %q", r.Comment(), r.Matches[1].Options[0].Args)
			}
		}},
		{"empty quoted comment", `-A X -m comment --comment "" -j ACCEPT`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "comment", "comment"), false, "")
		}},
		{"aliases", `-A X -p tcp -m tcp --destination-port 80 --source-port 1:1024 -m multiport --destination-ports 80,443 -m icmpv6 --icmpv6-type 128 -j ACCEPT`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "tcp", "dport"), false, "80")
			ptArgs(t, ptOpt(t, r, "tcp", "sport"), false, "1:1024")
			ptArgs(t, ptOpt(t, r, "multiport", "dports"), false, "80,443")
			ptArgs(t, ptOpt(t, r, "icmp6", "icmpv6-type"), false, "128")
		}},
		{"multi-argument options", `-A X -p tcp -m tcp ! --tcp-flags FIN,SYN,RST,ACK SYN -m set --match-set KUBE-X dst,dst -m sctp --chunk-types all INIT,SACK -j DROP`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "tcp", "tcp-flags"), true, "FIN,SYN,RST,ACK", "SYN")
			ptArgs(t, ptOpt(t, r, "set", "match-set"), false, "KUBE-X", "dst,dst")
			ptArgs(t, ptOpt(t, r, "sctp", "chunk-types"), false, "all", "INIT,SACK")
		}},
		{"old negation of a module option", `-A X -m conntrack --ctstate ! NEW -j ACCEPT`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "conntrack", "ctstate"), true, "NEW")
		}},
		{"target after matches then more matches", `-A X -j DNAT --to-destination 1.2.3.4:80 -p tcp -m tcp --dport 80`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "", "to-destination"), false, "1.2.3.4:80")
			ptArgs(t, ptOpt(t, r, "tcp", "dport"), false, "80")
			if len(r.TargetOptions) != 1 {
				t.Errorf("target options %v", r.TargetOptions)
			}
		}},
		{"counters option", `-A X -c 10 20 -j ACCEPT`, func(t *testing.T, r *Rule) {
			if r.Target != "ACCEPT" {
				t.Errorf("%+v", r)
			}
		}},
		{"CONNMARK and LOG", `-A X -j CONNMARK --save-mark --nfmask 0xffffffff --ctmask 0xffffffff`, func(t *testing.T, r *Rule) {
			ptArgs(t, ptOpt(t, r, "", "save-mark"), false)
			ptArgs(t, ptOpt(t, r, "", "ctmask"), false, "0xffffffff")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := ptParse(t, "*nat\n"+c.rule+"\nCOMMIT\n", ParseOptions{})
			c.check(t, ptRule(t, rs, "nat", "X", 0))
			for _, n := range rs.Notes {
				if !strings.Contains(n.Message, "has rules but no declaration") {
					t.Errorf("unexpected note %v", n)
				}
			}
		})
	}
}

func TestParseImplicitMatch(t *testing.T) {
	rs := ptParse(t, "-A INPUT -p tcp --dport 22 -j ACCEPT\n", ParseOptions{Table: "filter"})
	r := ptRule(t, rs, "filter", "INPUT", 0)
	ptArgs(t, ptOpt(t, r, "tcp", "dport"), false, "22")
	if len(rs.Notes) != 1 || !strings.Contains(rs.Notes[0].String(), "line 1: option --dport without -m tcp") {
		t.Errorf("notes %v", rs.Notes)
	}
}

func TestParseUnknown(t *testing.T) {
	for _, c := range []struct {
		name, rule string
		unknown    []string
		note       string
		check      func(t *testing.T, r *Rule)
	}{
		{"unknown module", `-A X -m foo --bar 1 --baz -p tcp -j ACCEPT`,
			[]string{"-m foo --bar 1 --baz"}, "line 2: unknown match module foo kept verbatim",
			func(t *testing.T, r *Rule) {
				want := Match{Module: "foo", Options: []Option{{Name: "bar", Args: []string{"1"}}, {Name: "baz"}}}
				if !reflect.DeepEqual(r.Matches[0], want) || r.Protocol.Name != "tcp" || r.Target != "ACCEPT" {
					t.Errorf("%+v", r.Matches[0])
				}
			}},
		{"negated options of an unknown module", `-A X -m foo ! --bar 1 2 -j ACCEPT`,
			[]string{"-m foo ! --bar 1 2"}, "unknown match module foo",
			func(t *testing.T, r *Rule) { ptArgs(t, ptOpt(t, r, "foo", "bar"), true, "1", "2") }},
		{"unknown option of a known module", `-A X -p tcp -m tcp --dport 80 --weird x y -j ACCEPT`,
			[]string{"-m tcp --weird x y"}, "line 2: unknown option --weird of match module tcp kept verbatim",
			func(t *testing.T, r *Rule) {
				m, _ := r.Match("tcp")
				if m.Known {
					t.Error("match with an unknown option should have Known false")
				}
				ptArgs(t, ptOpt(t, r, "tcp", "dport"), false, "80")
				ptArgs(t, ptOpt(t, r, "tcp", "weird"), false, "x", "y")
			}},
		{"unknown target with options", `-A X -j FOO --x 1 --y`,
			[]string{"-j FOO --x 1 --y"}, "line 2: unknown target FOO with options kept verbatim",
			func(t *testing.T, r *Rule) {
				if r.Target != "FOO" || len(r.TargetOptions) != 2 {
					t.Errorf("%q %v", r.Target, r.TargetOptions)
				}
			}},
		{"unknown option of a known target", `-A X -j LOG --weird --log-prefix "a b: "`,
			[]string{"-j LOG --weird"}, "unknown option --weird of target LOG kept verbatim",
			func(t *testing.T, r *Rule) { ptArgs(t, ptOpt(t, r, "", "log-prefix"), false, "a b: ") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := ptParse(t, "*filter\n"+c.rule+"\nCOMMIT\n", ParseOptions{})
			r := ptRule(t, rs, "filter", "X", 0)
			if !reflect.DeepEqual(r.Unknown, c.unknown) {
				t.Errorf("Unknown = %q, want %q", r.Unknown, c.unknown)
			}
			var notes []string
			for _, n := range rs.Notes {
				notes = append(notes, n.String())
			}
			if !strings.Contains(strings.Join(notes, "\n"), c.note) {
				t.Errorf("notes %q, want one containing %q", notes, c.note)
			}
			c.check(t, r)
		})
	}
}

func TestParseHeaders(t *testing.T) {
	for _, c := range []struct {
		name, text      string
		opts            ParseOptions
		family, backend string
		notes           []string
	}{
		{"ip6tables-save", "# Generated by ip6tables-save v1.8.9 (nf_tables) on x\n*nat\n-A X -d fd00::1 -s fd00::/8 -j ACCEPT\nCOMMIT\n",
			ParseOptions{}, "IPv6", "nf_tables", []string{"has rules but no declaration"}},
		{"legacy with counters", "# Generated by iptables-save v1.8.7 (legacy) on x\n*filter\n:INPUT DROP [12:3400]\n:X - [0:0]\n[5:300] -A X -j ACCEPT\nCOMMIT\n",
			ParseOptions{}, "IPv4", "legacy", nil},
		{"old header without backend", "# Generated by iptables-save v1.4.21 on x\n*filter\nCOMMIT\n", ParseOptions{}, "IPv4", "", nil},
		{"warning", "# Warning: iptables-legacy tables present, use iptables-legacy-save to see them\n*filter\nCOMMIT\n",
			ParseOptions{}, "IPv4", "", []string{"line 1: Warning: iptables-legacy tables present"}},
		{"family from first address", "-A KUBE-SVC-X -d 2001:db8::1 -j ACCEPT\n", ParseOptions{}, "IPv6", "", []string{"no table headers"}},
		{"family option", "-A X -j ACCEPT\n", ParseOptions{Family: "ipv6", Table: "filter"}, "IPv6", "", nil},
		{"CRLF and blank lines", "*filter\r\n\r\n  \r\n:X - [0:0]\r\n-A X -j ACCEPT\r\nCOMMIT\r\n", ParseOptions{}, "IPv4", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := ptParse(t, c.text, c.opts)
			if rs.Family != c.family || rs.Backend != c.backend {
				t.Errorf("family %q backend %q, want %q %q", rs.Family, rs.Backend, c.family, c.backend)
			}
			if len(rs.Notes) != len(c.notes) {
				t.Fatalf("notes %v, want %d", rs.Notes, len(c.notes))
			}
			for i, n := range rs.Notes {
				if !strings.Contains(n.String(), c.notes[i]) {
					t.Errorf("note %q, want %q", n, c.notes[i])
				}
			}
		})
	}
	rs := ptParse(t, "*filter\n:INPUT DROP [12:3400]\n:X - [0:0]\n[5:300] -A X -j ACCEPT\nCOMMIT\n", ParseOptions{})
	if c := rs.Chain("filter", "INPUT"); c.Policy != "DROP" || !c.Builtin || c.Line != 2 {
		t.Errorf("INPUT %+v", c)
	}
	if r := ptRule(t, rs, "filter", "X", 0); r.Raw != "[5:300] -A X -j ACCEPT" || r.Line != 4 {
		t.Errorf("counted rule %q line %d", r.Raw, r.Line)
	}
}
