package iptables

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

func benchCountRules(rs *Ruleset) int {
	n := 0
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			n += len(c.Rules())
		}
	}
	return n
}

func TestRenderLargeRuleset(t *testing.T) {
	const services, endpoints = 30, 4
	rs, err := ParseString("generated", snapshottest.IPTablesSave(services, endpoints), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nat := rs.Tables["nat"]
	if got, want := len(nat.Chains), 7+services*(1+endpoints)+1; got != want {
		t.Errorf("nat chains = %d, want %d", got, want)
	}
	if got, want := benchCountRules(rs), 4+7+1+services*(2+3*endpoints); got != want {
		t.Errorf("rules = %d, want %d", got, want)
	}
	if got := snapshottest.Probability(3); got != "0.33333333349" {
		t.Errorf("snapshottest.Probability(3) = %s, want 0.33333333349 as iptables-save prints it", got)
	}
	if len(rs.Notes) != 0 {
		t.Errorf("unexpected notes: %v", rs.Notes)
	}
}

func benchmarkParse(b *testing.B, services, endpoints int) {
	text := snapshottest.IPTablesSave(services, endpoints)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var rs *Ruleset
	for b.Loop() {
		var err error
		if rs, err = Parse("bench", strings.NewReader(text), ParseOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchCountRules(rs)), "rules/op")
}

// BenchmarkParse parses a node with 10,000 Services of 10 endpoints.
func BenchmarkParse(b *testing.B) { benchmarkParse(b, 10000, 10) }

// BenchmarkParse1k is the 1,000-Service baseline for the same run.
func BenchmarkParse1k(b *testing.B) { benchmarkParse(b, 1000, 10) }

// benchmarkObserve walks every frontend of a generated ruleset: the cost
// of drift and explain on a node of that size.
func benchmarkObserve(b *testing.B, services, endpoints int) {
	rs, err := ParseString("bench", snapshottest.IPTablesSave(services, endpoints), ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	in := dataplane.ObserveInput{Node: "bench", Family: "IPv4",
		NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := dataplane.Observe(&Plane{Rules: rs}, in)
		if len(t.Frontends) != services {
			b.Fatalf("%d frontends, want %d", len(t.Frontends), services)
		}
	}
	b.ReportMetric(float64(services), "frontends/op")
}

func BenchmarkObserve1k(b *testing.B)  { benchmarkObserve(b, 1000, 10) }
func BenchmarkObserve10k(b *testing.B) { benchmarkObserve(b, 10000, 10) }

// benchmarkParseNarrow is a narrowed analysis's read: the lazy read, then
// what every narrowed analysis asks of all chains (frontends, inferred
// settings, text checks); no chain but the dispatch chains is parsed.
func benchmarkParseNarrow(b *testing.B, services, endpoints int) {
	text := snapshottest.IPTablesSave(services, endpoints)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		rs, err := parseLazy("bench", text, ParseOptions{Family: "IPv4"})
		if err != nil {
			b.Fatal(err)
		}
		askWholeDump(b, rs, services)
	}
}

// askWholeDump asks what every narrowed analysis asks of all of a dump's
// chains: frontends, inferred settings, text checks.
func askWholeDump(b *testing.B, rs *Ruleset, services int) {
	p := &Plane{Rules: rs}
	if f := p.Frontends(); len(f) != services {
		b.Fatalf("%d frontends", len(f))
	}
	if in := p.Infer(); len(in.ClusterCIDRs) != 1 {
		b.Fatalf("inferred %+v", in)
	}
	if f := p.Checks("bench", "iptables"); len(f) != 0 || rs.Err() != nil {
		b.Fatalf("checks %v, %v", f, rs.Err())
	}
}

func BenchmarkParseNarrow1k(b *testing.B)  { benchmarkParseNarrow(b, 1000, 10) }
func BenchmarkParseNarrow10k(b *testing.B) { benchmarkParseNarrow(b, 10000, 10) }

// benchmarkParseDigested is benchmarkParseNarrow with the dump's digest,
// as explain reads a binary snapshot: the digest answers for all chains,
// and one Service's chains are made and parsed.
func benchmarkParseDigested(b *testing.B, services, endpoints int) {
	text := snapshottest.IPTablesSave(services, endpoints)
	data := digestOf(b, text)
	svc := snapshottest.ServiceChain(services / 2)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		rs, err := parseDigested("bench", text, ParseOptions{Family: "IPv4"}, data)
		if err != nil {
			b.Fatal(err)
		}
		askWholeDump(b, rs, services)
		if c := rs.Chain("nat", svc); c == nil || len(c.Rules()) < endpoints {
			b.Fatalf("chain %s: %v", svc, c)
		}
	}
}

func BenchmarkParseDigested1k(b *testing.B)  { benchmarkParseDigested(b, 1000, 10) }
func BenchmarkParseDigested10k(b *testing.B) { benchmarkParseDigested(b, 10000, 10) }

// BenchmarkParseParallel is BenchmarkParse as Load reads a dump: the
// chains parsed on every CPU.
func BenchmarkParseParallel(b *testing.B) {
	text := snapshottest.IPTablesSave(10000, 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseParallel("bench", text, ParseOptions{Family: "IPv4"}, parallelMin); err != nil {
			b.Fatal(err)
		}
	}
}
