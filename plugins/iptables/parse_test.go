package iptables

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const ptNode1 = "testdata/parse/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt"

// ptFixtures lists every fixture copied under testdata/parse.
func ptFixtures(t testing.TB) []string {
	var files []string
	err := filepath.WalkDir("testdata/parse", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 6 {
		t.Fatalf("fixtures: %v (%d files)", err, len(files))
	}
	return files
}

func ptParseFile(t *testing.T, path string, opts ParseOptions) *Ruleset {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := Parse(filepath.Base(path), f, opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return rs
}

func ptParse(t *testing.T, text string, opts ParseOptions) *Ruleset {
	t.Helper()
	rs, err := ParseString("test", text, opts)
	if err != nil {
		t.Fatalf("ParseString: %v\ninput:\n%s", err, text)
	}
	return rs
}

// ptRule returns rule i of a chain, failing the test if absent.
func ptRule(t *testing.T, rs *Ruleset, table, chain string, i int) *Rule {
	t.Helper()
	c := rs.Chain(table, chain)
	if c == nil || i >= len(c.Rules()) {
		t.Fatalf("no rule %d in %s/%s", i, table, chain)
	}
	return c.Rules()[i]
}

// ptOpt returns an option of a module ("" for the target).
func ptOpt(t *testing.T, r *Rule, module, name string) Option {
	t.Helper()
	if module == "" {
		o, ok := r.TargetOption(name)
		if !ok {
			t.Fatalf("%s: no target option %s in %q", r.Ref(), name, r.Raw)
		}
		return o
	}
	m, ok := r.Match(module)
	if !ok {
		t.Fatalf("%s: no -m %s in %q", r.Ref(), module, r.Raw)
	}
	o, ok := m.Option(name)
	if !ok {
		t.Fatalf("%s: no --%s in -m %s of %q", r.Ref(), name, module, r.Raw)
	}
	return o
}

func TestParseNode1(t *testing.T) {
	rs := ptParseFile(t, ptNode1, ParseOptions{})
	if rs.Family != "IPv4" || rs.Backend != "nf_tables" || rs.Source != "node1.iptables-save.txt" {
		t.Errorf("Family, Backend, Source = %q, %q, %q", rs.Family, rs.Backend, rs.Source)
	}
	if want := []string{"mangle", "filter", "nat"}; !reflect.DeepEqual(rs.TableOrder, want) {
		t.Errorf("TableOrder = %v, want %v", rs.TableOrder, want)
	}
	if len(rs.Notes) != 0 {
		t.Errorf("Notes = %v, want none", rs.Notes)
	}
	for _, c := range []struct {
		table          string
		chains, rules  int
		firstChain     string
		firstChainLine int
	}{
		{"mangle", 6, 0, "PREROUTING", 3},
		{"filter", 10, 22, "INPUT", 13},
		{"nat", 35, 85, "PREROUTING", 49},
	} {
		tb := rs.Tables[c.table]
		if tb == nil || tb.Name != c.table {
			t.Fatalf("table %s missing", c.table)
		}
		if len(tb.Chains) != c.chains || len(tb.ChainOrder) != c.chains || benchCountRules(&Ruleset{Tables: map[string]*Table{"x": tb}}) != c.rules {
			t.Errorf("%s: %d chains (%d ordered), want %d chains and %d rules", c.table, len(tb.Chains), len(tb.ChainOrder), c.chains, c.rules)
		}
		first := tb.Chains[tb.ChainOrder[0]]
		if first.Name != c.firstChain || first.Line != c.firstChainLine || !first.Builtin || first.Policy != "ACCEPT" {
			t.Errorf("%s: first chain %s", c.table, first.Name)
		}
	}
	if c := rs.Chain("nat", "KUBE-SERVICES"); c == nil || c.Builtin || c.Policy != "-" || c.Line != 74 || len(c.Rules()) != 10 {
		t.Errorf("nat KUBE-SERVICES = %+v", c)
	}

	// Every rule keeps its line and exact text, and was understood.
	lines := strings.Split(string(ptRead(t, ptNode1)), "\n")
	for _, tb := range rs.Tables {
		for _, c := range tb.Chains {
			for _, r := range c.Rules() {
				if r.Raw != lines[r.Line-1] || r.Table != tb.Name || r.Chain != c.Name {
					t.Errorf("rule %s: Raw %q is not line %d %q", r.Ref(), r.Raw, r.Line, lines[r.Line-1])
				}
				if len(r.Unknown) > 0 {
					t.Errorf("%s: Unknown = %q", r.Ref(), r.Unknown)
				}
				for _, m := range r.Matches {
					if !m.Known {
						t.Errorf("%s: -m %s not known", r.Ref(), m.Module)
					}
				}
			}
		}
	}

	// statistic: the probability as iptables-save prints it.
	r := ptRule(t, rs, "nat", "KUBE-SVC-P4Q3KNUAWJVP4ILH", 1)
	ptArgs(t, ptOpt(t, r, "statistic", "probability"), false, "0.33333333349")
	ptArgs(t, ptOpt(t, r, "statistic", "mode"), false, "random")
	if r.Comment() != "default/nginx:http -> 10.244.0.5:8080" || r.Target != "KUBE-SEP-DFWPZSRRP22P56ON" || r.Goto {
		t.Errorf("statistic rule: comment %q target %q", r.Comment(), r.Target)
	}

	// ! -s 10.244.0.0/16 on the masquerade rule.
	r = ptRule(t, rs, "nat", "KUBE-SVC-P4Q3KNUAWJVP4ILH", 0)
	if r.Source == nil || !r.Source.Negate || r.Source.Prefix != netip.MustParsePrefix("10.244.0.0/16") {
		t.Errorf("! -s: Source = %+v", r.Source)
	}
	if r.Dest == nil || r.Dest.Negate || r.Dest.Prefix != netip.MustParsePrefix("10.96.94.233/32") {
		t.Errorf("-d: Dest = %+v", r.Dest)
	}
	if r.Protocol == nil || r.Protocol.Name != "tcp" || r.Target != "KUBE-MARK-MASQ" {
		t.Errorf("-p / -j: %+v %q", r.Protocol, r.Target)
	}
	ptArgs(t, ptOpt(t, r, "tcp", "dport"), false, "80")

	// DNAT --to-destination.
	r = ptRule(t, rs, "nat", "KUBE-SEP-DFWPZSRRP22P56ON", 1)
	ptArgs(t, ptOpt(t, r, "", "to-destination"), false, "10.244.0.5:8080")
	if m, ok := r.Match("tcp"); !ok || len(m.Options) != 0 || r.Target != "DNAT" {
		t.Errorf("DNAT rule: -m tcp %+v, target %q", m, r.Target)
	}

	// A comment with spaces.
	if got := ptRule(t, rs, "nat", "KUBE-SERVICES", 0).Comment(); got != "default/nginx:http cluster IP" {
		t.Errorf("comment = %q", got)
	}
	if got := ptRule(t, rs, "nat", "KUBE-SERVICES", 9).Comment(); got != "kubernetes service nodeports; NOTE: this must be the last rule in this chain" {
		t.Errorf("comment = %q", got)
	}

	// MARK, MASQUERADE, REJECT.
	ptArgs(t, ptOpt(t, ptRule(t, rs, "nat", "KUBE-MARK-MASQ", 0), "", "set-xmark"), false, "0x4000/0x4000")
	ptArgs(t, ptOpt(t, ptRule(t, rs, "nat", "KUBE-POSTROUTING", 2), "", "random-fully"), false)
	ptArgs(t, ptOpt(t, ptRule(t, rs, "nat", "KUBE-POSTROUTING", 0), "mark", "mark"), true, "0x4000/0x4000")
	r = ptRule(t, rs, "filter", "KUBE-SERVICES", 0)
	ptArgs(t, ptOpt(t, r, "", "reject-with"), false, "icmp-port-unreachable")
	if r.Target != "REJECT" {
		t.Errorf("REJECT rule target %q", r.Target)
	}

	// nfacct with two spaces before its argument; conntrack.
	r = ptRule(t, rs, "filter", "KUBE-FORWARD", 0)
	ptArgs(t, ptOpt(t, r, "nfacct", "nfacct-name"), false, "ct_state_invalid_dropped_pkts")
	ptArgs(t, ptOpt(t, r, "conntrack", "ctstate"), false, "INVALID")
	r = ptRule(t, rs, "filter", "KUBE-FIREWALL", 0)
	ptArgs(t, ptOpt(t, r, "conntrack", "ctstate"), true, "RELATED,ESTABLISHED,DNAT")
	if r.Source == nil || !r.Source.Negate || r.Source.Prefix.String() != "127.0.0.0/8" {
		t.Errorf("KUBE-FIREWALL source %+v", r.Source)
	}

	// recent --rcheck, in order, and --set.
	r = ptRule(t, rs, "nat", "KUBE-SVC-I5LIAMPLWKMBJ54B", 1)
	m, _ := r.Match("recent")
	want := []Option{{Name: "rcheck"}, {Name: "seconds", Args: []string{"10800"}}, {Name: "reap"},
		{Name: "name", Args: []string{"KUBE-SEP-AYUOQS72ACVHTEHH"}}, {Name: "mask", Args: []string{"255.255.255.255"}}, {Name: "rsource"}}
	if m == nil || !reflect.DeepEqual(m.Options, want) || !m.Known {
		t.Errorf("recent rcheck = %+v, want %+v", m, want)
	}
	ptArgs(t, ptOpt(t, ptRule(t, rs, "nat", "KUBE-SEP-AYUOQS72ACVHTEHH", 1), "recent", "set"), false)

	// A rule with no target; addrtype.
	if r := ptRule(t, rs, "nat", "KUBE-FW-I5LIAMPLWKMBJ54B", 1); r.Target != "" || r.TargetOptions != nil {
		t.Errorf("targetless rule: %q %v", r.Target, r.TargetOptions)
	}
	ptArgs(t, ptOpt(t, ptRule(t, rs, "nat", "KUBE-EXT-I5LIAMPLWKMBJ54B", 1), "addrtype", "src-type"), false, "LOCAL")
}

func ptRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptArgs(t *testing.T, o Option, negate bool, args ...string) {
	t.Helper()
	if o.Negate != negate || len(o.Args) != len(args) || (len(args) > 0 && !reflect.DeepEqual(o.Args, args)) {
		t.Errorf("option --%s: negate %v args %q, want %v %q", o.Name, o.Negate, o.Args, negate, args)
	}
}

func TestParseEmptyDump(t *testing.T) {
	rs := ptParseFile(t, "testdata/parse/kube-proxy-v1.36.3/two-nodes/node2.iptables-save.txt", ParseOptions{})
	if len(rs.Tables) != 0 || len(rs.TableOrder) != 0 || len(rs.Notes) != 0 || rs.Family != "IPv4" || rs.Tables == nil {
		t.Errorf("empty dump parsed to %+v", rs)
	}
}

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		file          string
		chains, rules int
		note          string
	}{
		{"old-1.1x-clusterip", 5, 10, "chain names KUBE-SEP-*, KUBE-SVC-*"},
		{"v1.2x-clusterip-masq", 2, 5, "chain names KUBE-SVC-*; jumps to KUBE-SVC-*"},
		{"old-nodeport-mysql", 9, 14, "the rest of the file (chains OUTPUT)"},
		{"userspace-mode", 4, 4, "chain names KUBE-NODEPORT-CONTAINER, KUBE-NODEPORT-HOST, KUBE-PORTALS-*"},
	} {
		t.Run(c.file, func(t *testing.T) {
			rs := ptParseFile(t, "testdata/parse/seeds/"+c.file+".nat-rules.txt", ParseOptions{})
			nat := rs.Tables["nat"]
			if len(rs.Tables) != 1 || nat == nil || len(nat.Chains) != c.chains || benchCountRules(rs) != c.rules {
				t.Fatalf("tables %v: want only nat with %d chains, %d rules", rs.TableOrder, c.chains, c.rules)
			}
			if len(rs.Notes) != 1 || !strings.HasPrefix(rs.Notes[0].Message, "no table headers: rules placed in table nat, inferred from ") ||
				!strings.Contains(rs.Notes[0].Message, c.note) {
				t.Errorf("notes = %q, want one inference note mentioning %q", rs.Notes, c.note)
			}
			for _, name := range nat.ChainOrder {
				if ch := nat.Chains[name]; ch.Line != 0 || ch.Policy != "" {
					t.Errorf("chain %s: Line %d Policy %q, want 0 and empty (seen only in rules)", name, ch.Line, ch.Policy)
				}
			}
			// An explicit table wins and is not a note.
			rs = ptParseFile(t, "testdata/parse/seeds/"+c.file+".nat-rules.txt", ParseOptions{Table: "mangle"})
			if len(rs.Tables) != 1 || rs.Tables["mangle"] == nil || len(rs.Notes) != 0 || benchCountRules(rs) != c.rules {
				t.Errorf("with Table mangle: tables %v notes %v", rs.TableOrder, rs.Notes)
			}
		})
	}
	rs := ptParseFile(t, "testdata/parse/seeds/userspace-mode.nat-rules.txt", ParseOptions{})
	r := ptRule(t, rs, "nat", "KUBE-PORTALS-CONTAINER", 0)
	ptArgs(t, ptOpt(t, r, "", "to-ports"), false, "36463")
	if r.Target != "REDIRECT" || r.Comment() != "default/ssh-service1:" || r.Dest.Prefix.String() != "10.254.132.107/32" {
		t.Errorf("REDIRECT rule = %+v", r)
	}
}

// TestParseAllFixtures parses every copied fixture through both entry
// points and checks the results agree.
func TestParseAllFixtures(t *testing.T) {
	for _, path := range ptFixtures(t) {
		a := ptParseFile(t, path, ParseOptions{})
		b := ptParse(t, string(ptRead(t, path)), ParseOptions{})
		b.Source = a.Source
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: Parse and ParseString disagree", path)
		}
	}
}
