package iptables

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// lazyInputs are the dumps a lazy read is compared on: every parse fixture
// and a generated node.
func lazyInputs(t testing.TB) map[string]string {
	in := map[string]string{"generated": snapshottest.IPTablesSave(40, 3)}
	for _, path := range ptFixtures(t) {
		in[path] = string(ptRead(t, path))
	}
	return in
}

// TestLazySameAnswers: what a narrowed analysis asks of a lazy read
// (frontends, inferred settings, text checks, every chain's rules, notes)
// is what a full read gives.
func TestLazySameAnswers(t *testing.T) {
	lazyReads := 0
	for name, text := range lazyInputs(t) {
		full, err := ParseString(name, text, ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		opts := ParseOptions{Family: full.Family}
		lazy, err := parseLazy(name, text, opts)
		if err != nil {
			t.Fatalf("%s: lazy: %v", name, err)
		}
		if len(lazy.lazy) > 0 {
			lazyReads++
		}
		if !reflect.DeepEqual(discover(lazy), discover(full)) {
			t.Errorf("%s: frontends differ", name)
		}
		if got, want := Infer(lazy), Infer(full); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: inferred %+v, want %+v", name, got, want)
		}
		for _, mode := range []string{"", "ipvs"} {
			if got, want := TextChecks(lazy, "n", mode), TextChecks(full, "n", mode); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: checks (mode %q) differ:\n got %+v\nwant %+v", name, mode, got, want)
			}
		}
		if !slices.Equal(lazy.TableOrder, full.TableOrder) {
			t.Fatalf("%s: tables %v, want %v", name, lazy.TableOrder, full.TableOrder)
		}
		for _, tname := range full.TableOrder {
			lt, ft := lazy.Tables[tname], full.Tables[tname]
			if !slices.Equal(lt.ChainOrder, ft.ChainOrder) {
				t.Errorf("%s: table %s chains differ", name, tname)
				continue
			}
			for _, cname := range ft.ChainOrder {
				lc, fc := lt.Chains[cname], ft.Chains[cname]
				if lc.Len() != fc.Len() || lc.Line != fc.Line || lc.Policy != fc.Policy {
					t.Errorf("%s: %s/%s: %d rules, line %d, policy %q; want %d, %d, %q", name, tname, cname,
						lc.Len(), lc.Line, lc.Policy, fc.Len(), fc.Line, fc.Policy)
				}
				if !reflect.DeepEqual(rulesView(lc.Rules()), rulesView(fc.Rules())) {
					t.Errorf("%s: %s/%s: rules differ", name, tname, cname)
				}
			}
		}
		if err := lazy.Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		byLine := func(n []Note) []Note {
			n = slices.Clone(n)
			slices.SortStableFunc(n, func(a, b Note) int { return a.Line - b.Line })
			return n
		}
		if got, want := byLine(lazy.AllNotes()), byLine(full.Notes); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: notes\n got %v\nwant %v", name, got, want)
		}
	}
	if lazyReads < 2 {
		t.Errorf("only %d inputs were read lazily", lazyReads)
	}
}

// rulesView is rules to compare between reads: the chain a rule jumps to
// by its name.
func rulesView(rules []*Rule) []Rule {
	var out []Rule
	for _, r := range rules {
		v := *r
		if v.jump != nil {
			v.jump = &Chain{Name: v.jump.Name}
		}
		out = append(out, v)
	}
	return out
}

const lazyBroken = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SVC-B - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-B
-A KUBE-SVC-A -j DNAT --to-destination 10.244.1.1:80
-A KUBE-SVC-B -p tcp --bogus-option 1 -j DNAT --to-destination 10.244.1.2:80
COMMIT
`

// TestLazyErrors: a fault in a chain no one used is not seen; the first use
// of the chain finds it, with the position a full read gives; faults a
// lazy read can see at once are refused at once.
func TestLazyErrors(t *testing.T) {
	_, want := ParseString("broken", lazyBroken, ParseOptions{Family: "IPv4"})
	if want == nil {
		t.Fatal("the full read accepted the broken rule")
	}
	rs, err := parseLazy("broken", lazyBroken, ParseOptions{Family: "IPv4"})
	if err != nil {
		t.Fatalf("lazy read: %v", err)
	}
	if len(rs.Chain("nat", "KUBE-SVC-A").Rules()) != 1 || rs.Err() != nil {
		t.Fatalf("KUBE-SVC-A: %v", rs.Err())
	}
	if got := rs.Chain("nat", "KUBE-SVC-B").Rules(); len(got) != 0 {
		t.Errorf("KUBE-SVC-B kept %d rules", len(got))
	}
	var pe *ParseError
	if err := rs.Err(); !errors.As(err, &pe) || err.Error() != want.Error() || pe.Line != 11 {
		t.Errorf("Err() = %v, want %v", err, want)
	}

	missing := strings.Replace(lazyBroken, "-p tcp --bogus-option 1 -j DNAT --to-destination 10.244.1.2:80", "-j KUBE-SEP-GONE", 1)
	_, want = ParseString("missing", missing, ParseOptions{Family: "IPv4"})
	rs, err = parseLazy("missing", missing, ParseOptions{Family: "IPv4"})
	if err != nil || want == nil {
		t.Fatalf("lazy %v, full %v", err, want)
	}
	rs.Chain("nat", "KUBE-SVC-B").Rules()
	if err := rs.Err(); err == nil || err.Error() != want.Error() {
		t.Errorf("jump to a missing chain: %v, want %v", err, want)
	}

	for name, text := range map[string]string{
		"truncated":     strings.TrimSuffix(strings.Replace(lazyBroken, "--bogus-option 1 ", "", 1), "COMMIT\n"),
		"chainless":     "*nat\n:PREROUTING ACCEPT [0:0]\n-A\nCOMMIT\n",
		"quoted chain":  "*nat\n:PREROUTING ACCEPT [0:0]\n-A \"PREROUTING -j ACCEPT\nCOMMIT\n",
		"outside table": "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n-A PREROUTING -j ACCEPT\nCOMMIT\n",
	} {
		_, want := ParseString(name, text, ParseOptions{Family: "IPv4"})
		_, err := parseLazy(name, text, ParseOptions{Family: "IPv4"})
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("%s: lazy read: %v, want %v", name, err, want)
		}
	}
}

// TestLazyShortcuts: the target and source address read off a line without
// parsing it are the parsed rule's, or the line is left to the parser.
func TestLazyShortcuts(t *testing.T) {
	lines := []string{
		`-A KUBE-SVC-X ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment "ns/a:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`,
		`-A KUBE-SVC-X -m comment --comment "ns/a:http -> 10.244.1.2:80" -m statistic --mode random --probability 0.5 -j KUBE-SEP-Y`,
		`-A KUBE-SEP-Y -s 10.244.1.2/32 -m comment --comment ns/a:http -j KUBE-MARK-MASQ`,
		`-A KUBE-SEP-Y -p tcp -m tcp -j DNAT --to-destination 10.244.1.2:80`,
		`-A KUBE-EXT-X -s 10.244.0.0/16 -m comment --comment "pod traffic for ns/a:http external destinations" -j KUBE-SVC-X`,
		`-A KUBE-X -m comment --comment "a -j KUBE-SVC-FAKE here" -j RETURN`,
		`-A KUBE-X -m comment --comment "a -s 10.0.0.0/8 here" -j RETURN`,
		`-A KUBE-X -m comment --comment "no target -j KUBE-SVC-FAKE"`,
		`-A KUBE-X -g KUBE-SVC-X`,
		`-A KUBE-X --jump KUBE-SVC-X`,
		`-A KUBE-X --source 10.1.0.0/16 -m addrtype --src-type LOCAL -j ACCEPT`,
		`-A KUBE-X -m addrtype --src-type LOCAL -j ACCEPT`,
		`-A KUBE-X -p tcp -m multiport --sports 80,443 -j ACCEPT`,
		`-A KUBE-X -m comment --comment "quoted at the end -j"`,
		`-A KUBE-X`,
	}
	p := &dumpParser{src: "t", family: famIPv4, familyB: "test", rs: &Ruleset{}, table: &Table{Name: "filter", Chains: map[string]*Chain{}}}
	for _, line := range lines {
		toks, err := p.tokenize(line, 0, 1)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		r := &Rule{Raw: line}
		if err := p.parseRule(r, line, 1, toks[2:]); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if target, ok := plainTarget(line); ok && target != r.Target {
			t.Errorf("%s: target %q read off the line, parsed %q", line, target, r.Target)
		}
		addr, found, certain := sourceText(line)
		if !certain {
			continue
		}
		switch {
		case found != (r.Source != nil):
			t.Errorf("%s: source found %v, parsed %+v", line, found, r.Source)
		case found:
			if got := fmt.Sprint(netip.MustParsePrefix(addr)); got != r.Source.Prefix.String() {
				t.Errorf("%s: source %s read off the line, parsed %s", line, got, r.Source.Prefix)
			}
		}
	}
	for line, certain := range map[string]bool{lines[0]: true, lines[1]: true, lines[5]: true, lines[7]: false, lines[9]: false} {
		if _, ok := plainTarget(line); ok != certain {
			t.Errorf("%s: target certain %v, want %v", line, ok, certain)
		}
	}
	if _, _, certain := sourceText(`-A KUBE-X -s 10.1.0.0/16 -s 10.2.0.0/16 -j ACCEPT`); certain {
		t.Errorf("two sources read as certain")
	}
}

// TestLazyConcurrentWalks: observing a lazy read walks frontends on every
// CPU, each parsing the chains it enters first; the table is the full
// read's (run with -race).
func TestLazyConcurrentWalks(t *testing.T) {
	text := snapshottest.IPTablesSave(60, 4)
	full, err := ParseString("gen", text, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := dataplane.ObserveInput{Node: "n", Family: "IPv4",
		NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	want := dataplane.Observe(&Plane{Rules: full}, in)
	for range 3 {
		lazy, err := parseLazy("gen", text, ParseOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		if got := dataplane.Observe(&Plane{Rules: lazy}, in); !reflect.DeepEqual(got, want) {
			t.Fatal("a lazy read observes another table than a full read")
		}
	}
}

// FuzzLazy checks a lazy read against a full read of the same input: the
// lazy read refuses at once what it can see (and what it refuses, the full
// read refuses too, maybe first for a rule before it); once every chain is parsed, it
// holds the full read's rules and notes, or its Err is an error of the
// full read's (the first one of the chain it was found in).
func FuzzLazy(f *testing.F) {
	for _, path := range ptFixtures(f) {
		f.Add(string(ptRead(f, path)))
	}
	f.Add(lazyBroken)
	f.Add(towardRules)
	f.Add(snapshottest.IPTablesSave(3, 2))
	f.Fuzz(func(t *testing.T, text string) {
		full, fullErr := ParseString("fuzz", text, ParseOptions{Family: "IPv4"})
		par, parErr := parseParallel("fuzz", text, ParseOptions{Family: "IPv4"}, 0)
		if parErr == nil {
			parErr = par.Err()
		}
		if (parErr == nil) != (fullErr == nil) || parErr != nil && parErr.Error() != fullErr.Error() {
			t.Fatalf("parallel read: %v; full read: %v", parErr, fullErr)
		}
		if fullErr == nil && !reflect.DeepEqual(par.AllNotes(), full.Notes) {
			t.Fatalf("parallel read's notes\n got %v\nwant %v", par.AllNotes(), full.Notes)
		}
		lazy, err := parseLazy("fuzz", text, ParseOptions{Family: "IPv4"})
		if err != nil {
			if fullErr == nil {
				t.Fatalf("lazy read refused %v; the full read did not", err)
			}
			return
		}
		for _, tn := range lazy.TableOrder {
			for _, c := range lazy.Tables[tn].order {
				c.Rules()
			}
		}
		if late := lazy.Err(); late != nil || fullErr != nil {
			if late == nil || fullErr == nil {
				t.Fatalf("after every chain: lazy %v, full %v", late, fullErr)
			}
			var pe *ParseError
			if !errors.As(late, &pe) || !strings.Contains(text, pe.Text) {
				t.Fatalf("late error %v names no line of the input", late)
			}
			return
		}
		for _, tn := range full.TableOrder {
			for _, cn := range full.Tables[tn].ChainOrder {
				lc := lazy.Chain(tn, cn)
				if lc == nil || !reflect.DeepEqual(rulesView(lc.Rules()), rulesView(full.Chain(tn, cn).Rules())) {
					t.Fatalf("%s/%s: rules differ", tn, cn)
				}
			}
		}
		byLine := func(n []Note) []Note {
			n = slices.Clone(n)
			slices.SortStableFunc(n, func(a, b Note) int { return a.Line - b.Line })
			return n
		}
		if got, want := byLine(lazy.AllNotes()), byLine(full.Notes); len(got) != len(want) {
			t.Fatalf("notes\n got %v\nwant %v", got, want)
		}
	})
}

// TestParseParallel: a read of the chains on every CPU gives exactly what a
// read in order gives: rules, notes in their order, and errors.
func TestParseParallel(t *testing.T) {
	inputs := lazyInputs(t)
	inputs["broken"] = lazyBroken
	inputs["truncated"] = strings.TrimSuffix(snapshottest.IPTablesSave(5, 2), "COMMIT\n")
	inputs["undeclared"] = "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m bogus --x 1 -j KUBE-X\n-A KUBE-X -m foo -j ACCEPT\nCOMMIT\n"
	for name, text := range inputs {
		opts := ParseOptions{Family: "IPv4"}
		full, fullErr := ParseString(name, text, opts)
		par, err := parseParallel(name, text, opts, 0)
		if err == nil {
			// The per-Service chains are parsed by walks, the rest when
			// the read's error or notes are asked.
			err = par.Err()
		}
		if fullErr != nil || err != nil {
			if fullErr == nil || err == nil || err.Error() != fullErr.Error() {
				t.Errorf("%s: error %v, want %v", name, err, fullErr)
			}
			continue
		}
		if !reflect.DeepEqual(par.AllNotes(), full.Notes) {
			t.Errorf("%s: notes\n got %v\nwant %v", name, par.AllNotes(), full.Notes)
		}
		if par.Backend != full.Backend || par.Family != full.Family || !slices.Equal(par.TableOrder, full.TableOrder) || par.Err() != nil {
			t.Fatalf("%s: ruleset differs", name)
		}
		for _, tn := range full.TableOrder {
			if !slices.Equal(par.Tables[tn].ChainOrder, full.Tables[tn].ChainOrder) {
				t.Fatalf("%s: %s: chains differ", name, tn)
			}
			for _, c := range full.Tables[tn].order {
				pc := par.Chain(tn, c.Name)
				if pc.Len() != c.Len() || pc.Line != c.Line || pc.Policy != c.Policy || !reflect.DeepEqual(rulesView(pc.Rules()), rulesView(c.Rules())) {
					t.Errorf("%s: %s/%s differs", name, tn, c.Name)
				}
			}
		}
	}
}
