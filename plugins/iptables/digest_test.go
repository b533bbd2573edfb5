package iptables

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// digestOf is the digest IndexDump makes of text, read as an IPv4
// iptables-save dump of node n (nil: not digested).
func digestOf(t testing.TB, text string) []byte {
	t.Helper()
	ns := snapshot.NodeState{Name: "n", Dumps: []snapshot.Dump{{Collector: CollectorSave, Text: text}}}
	data, err := Loader{}.IndexDump(&ns, &ns.Dumps[0])
	if err != nil {
		t.Fatalf("IndexDump: %v", err)
	}
	return data
}

// TestDigestSameAnswers: a read with the dump's digest gives what a full
// read gives, as TestLazySameAnswers asks of a lazy read: frontends,
// inferred settings, text checks, every chain and its rules, and notes.
func TestDigestSameAnswers(t *testing.T) {
	digested := 0
	inputs := lazyInputs(t)
	inputs["interleaved"] = interleaved
	for name, text := range inputs {
		full, err := ParseString(name, text, ParseOptions{Family: "IPv4"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data := digestOf(t, text)
		if data == nil {
			continue
		}
		digested++
		rs, err := parseDigested(name, text, ParseOptions{Family: "IPv4"}, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rs.facts == nil {
			t.Fatalf("%s: no facts", name)
		}
		pl := &Plane{Rules: rs}
		if got, want := pl.Frontends(), discover(full); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: frontends\n got %+v\nwant %+v", name, got, want)
		}
		if got, want := pl.Infer(), (&Plane{Rules: full}).Infer(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: inferred %+v, want %+v", name, got, want)
		}
		for _, mode := range []string{"", "ipvs"} {
			if got, want := TextChecks(rs, "n", mode), TextChecks(full, "n", mode); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: checks (mode %q) differ:\n got %+v\nwant %+v", name, mode, got, want)
			}
		}
		if rs.Backend != full.Backend || rs.Family != full.Family || !slices.Equal(rs.TableOrder, full.TableOrder) {
			t.Fatalf("%s: %s %s %v, want %s %s %v", name, rs.Backend, rs.Family, rs.TableOrder, full.Backend, full.Family, full.TableOrder)
		}
		for _, tname := range full.TableOrder {
			dt, ft := rs.Tables[tname], full.Tables[tname]
			if dt.size() != ft.size() {
				t.Errorf("%s: table %s has %d chains, want %d", name, tname, dt.size(), ft.size())
				continue
			}
			// Each chain looked up (and made) alone first, then all.
			for i, cname := range ft.ChainOrder {
				dc, fc := dt.Chain(cname), ft.Chains[cname]
				if dc == nil {
					t.Errorf("%s: %s/%s not found", name, tname, cname)
					continue
				}
				if dc.pos != i || dc.Builtin != fc.Builtin || dc.Len() != fc.Len() || dc.Line != fc.Line || dc.Policy != fc.Policy {
					t.Errorf("%s: %s/%s: %d rules, line %d, policy %q; want %d, %d, %q", name, tname, cname,
						dc.Len(), dc.Line, dc.Policy, fc.Len(), fc.Line, fc.Policy)
				}
				if !reflect.DeepEqual(rulesView(dc.Rules()), rulesView(fc.Rules())) {
					t.Errorf("%s: %s/%s: rules differ", name, tname, cname)
				}
			}
			if dt.Chain("NO-SUCH-CHAIN") != nil {
				t.Errorf("%s: table %s has a chain NO-SUCH-CHAIN", name, tname)
			}
			all := dt.chains()
			if !slices.Equal(dt.ChainOrder, ft.ChainOrder) || len(all) != len(ft.ChainOrder) || len(dt.Chains) != len(ft.Chains) {
				t.Errorf("%s: table %s chains differ", name, tname)
				continue
			}
			for i, c := range all {
				if c != dt.Chain(c.Name) || c.pos != i {
					t.Errorf("%s: %s/%s made twice, or out of place", name, tname, c.Name)
				}
			}
		}
		// Without the facts (a digested dump merged with another), the
		// answers come from the chains.
		bare, err := parseDigested(name, text, ParseOptions{Family: "IPv4"}, data)
		if err != nil {
			t.Fatal(err)
		}
		bare.facts = nil
		if !reflect.DeepEqual(discover(bare), discover(full)) || !reflect.DeepEqual(Infer(bare), Infer(full)) ||
			!reflect.DeepEqual(TextChecks(bare, "n", ""), TextChecks(full, "n", "")) || countKube(bare) != countKube(full) {
			t.Errorf("%s: without the facts, the answers differ", name)
		}
		if err := rs.Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		byLine := func(n []Note) []Note {
			n = slices.Clone(n)
			slices.SortStableFunc(n, func(a, b Note) int { return a.Line - b.Line })
			return n
		}
		if got, want := byLine(rs.AllNotes()), byLine(full.Notes); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: notes\n got %v\nwant %v", name, got, want)
		}
	}
	if digested < 2 {
		t.Errorf("only %d inputs were digested", digested)
	}
}

// interleaved has chains whose lines are not one run: another chain's line,
// a comment, a blank line and counters between them, and CRLF line ends.
const interleaved = "*nat\r\n:PREROUTING ACCEPT [0:0]\r\n:KUBE-SERVICES - [0:0]\r\n:KUBE-SVC-A - [0:0]\r\n:KUBE-SEP-A - [0:0]\r\n:KUBE-MARK-MASQ - [0:0]\r\n" +
	"-A PREROUTING -j KUBE-SERVICES\r\n" +
	"[3:180] -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A\r\n" +
	"-A KUBE-SVC-A -m comment --comment \"ns/a:http\" -j KUBE-SEP-A\r\n" +
	"# a comment\r\n" +
	"-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A\r\n\r\n" +
	"-A KUBE-SEP-A -s 10.244.1.1/32 -j KUBE-MARK-MASQ\r\n" +
	"-A KUBE-SEP-A -p tcp -j DNAT --to-destination 10.244.1.1:80\r\n" +
	"-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\r\n" +
	":KUBE-NODEPORTS - [0:0]\r\nCOMMIT\r\n"

// TestDigestNotUsed: a digest that is damaged, of another dump or of
// another version is not used: the dump is read as if it had none, with a
// note unless the digest is only of another version; no damage panics.
func TestDigestNotUsed(t *testing.T) {
	text := lazyInputs(t)["generated"]
	data := digestOf(t, text)
	if data == nil {
		t.Fatal("the generated dump was not digested")
	}
	opts := ParseOptions{Family: "IPv4"}
	for n := range len(data) {
		if n > 256 && n < len(data)-256 && n%97 != 0 {
			continue
		}
		if _, err := parseDigested("d", text, opts, data[:n]); !errors.Is(err, errDigest) {
			t.Fatalf("digest cut to %d of %d bytes: %v, want a damaged digest", n, len(data), err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		bad := slices.Clone(data)
		for range 1 + rng.IntN(3) {
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		}
		rs, err := parseDigested("d", text, opts, bad)
		if err == nil {
			// What a flip leaves readable still reads within the text.
			for _, tn := range rs.TableOrder {
				for _, c := range rs.Tables[tn].chains() {
					c.Rules()
				}
			}
		}
	}

	other := strings.Replace(text, "10.96.", "10.97.", 1)
	if _, err := parseDigested("d", other, opts, data); !errors.Is(err, errDigest) || !strings.Contains(err.Error(), "another dump") {
		t.Errorf("digest of another dump: %v", err)
	}
	if _, err := parseDigested("d", text, ParseOptions{Family: "IPv6"}, data); !errors.Is(err, errDigest) {
		t.Errorf("digest read with other options: %v", err)
	}
	newer := slices.Clone(data)
	newer[len(digestMagic)] = digestVersion + 1
	if _, err := parseDigested("d", text, opts, newer); !errors.Is(err, errDigestVersion) {
		t.Errorf("digest of another version: %v", err)
	}

	lazy, err := parseLazy("d", text, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		text  string
		index []byte
		note  bool
	}{
		"damaged":       {text, data[:len(data)/2], true},
		"another dump":  {other, data, true},
		"other version": {text, newer, false},
	} {
		rs, err := readNarrow(&snapshot.Dump{Text: c.text, Index: c.index}, "d", opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rs.facts != nil || len(rs.lazy) != 1 {
			t.Errorf("%s: the digest was used", name)
		}
		noted := slices.ContainsFunc(rs.Notes, func(n Note) bool { return strings.Contains(n.Message, "index was not used") })
		if noted != c.note || len(rs.Notes) != len(lazy.Notes)+btoi(c.note) {
			t.Errorf("%s: notes %v (a note on the index: %v)", name, rs.Notes, c.note)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzDigest: no digest, however made, makes a read panic, and a digest
// that reads holds only lines of the dump.
func FuzzDigest(f *testing.F) {
	text := lazyInputs(f)["generated"]
	f.Add(digestOf(f, text))
	f.Add([]byte(digestMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := parseDigested("fuzz", text, ParseOptions{Family: "IPv4"}, data)
		if err != nil {
			if !errors.Is(err, errDigest) && !errors.Is(err, errDigestVersion) {
				t.Fatalf("error %v is neither a damaged digest nor another version", err)
			}
			return
		}
		for _, tn := range rs.TableOrder {
			for _, c := range rs.Tables[tn].chains() {
				if l := c.lazy; l != nil {
					for _, ln := range l.lines {
						if _, ok := offsetIn(text, ln.text); !ok && ln.text != "" {
							t.Fatalf("%s/%s: a line outside the dump", tn, c.Name)
						}
					}
				}
			}
		}
	})
}
