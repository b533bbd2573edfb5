package nftables

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

func benchCountRules(rs *Ruleset) int {
	n := 0
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			n += len(c.Rules)
		}
	}
	return n
}

// TestParseLargeRuleset: the synthetic node the benchmarks read parses
// whole, without notes, into kube-proxy's two tables.
func TestParseLargeRuleset(t *testing.T) {
	const services, endpoints = 30, 4
	rs := mustParse(t, "generated", []byte(snapshottest.NFTablesJSON(services, endpoints)))
	if len(rs.Tables) != 2 || rs.Tables[0].ID() != "ip kube-proxy" || rs.Tables[1].ID() != "ip6 kube-proxy" {
		t.Fatalf("tables %v, want ip and ip6 kube-proxy", rs.Tables)
	}
	ip := rs.Tables[0]
	// 15 fixed chains per table (22 rules in ip, 20 in ip6); one chain of
	// one rule per Service.
	if got, want := len(ip.Chains), 15+services; got != want {
		t.Errorf("ip chains = %d, want %d", got, want)
	}
	if got, want := benchCountRules(rs), 22+20+services; got != want {
		t.Errorf("rules = %d, want %d", got, want)
	}
	if c := ip.Chain(snapshottest.ServiceChainNFT(services - 1)); c == nil || len(c.Rules) != 1 {
		t.Errorf("chain of the last Service: %v", c)
	}
	if s := ip.Set("service-ips"); s == nil || len(s.Elements) != services {
		t.Errorf("service-ips: %v", s)
	}
	if len(rs.Notes) != 0 {
		t.Errorf("unexpected notes: %v", rs.Notes)
	}
}

func benchmarkParse(b *testing.B, services, endpoints int) {
	data := []byte(snapshottest.NFTablesJSON(services, endpoints))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var rs *Ruleset
	for b.Loop() {
		var err error
		if rs, err = Parse("bench", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchCountRules(rs)), "rules/op")
}

// BenchmarkParse1k and BenchmarkParse10k parse the nft -j list ruleset of
// a node with 1,000 and 10,000 Services of 10 endpoints.
func BenchmarkParse1k(b *testing.B)  { benchmarkParse(b, 1000, 10) }
func BenchmarkParse10k(b *testing.B) { benchmarkParse(b, 10000, 10) }

// benchmarkObserve walks every frontend of a generated ruleset: the cost
// of drift and explain on a node of that size.
func benchmarkObserve(b *testing.B, services, endpoints int) {
	rs, err := Parse("bench", []byte(snapshottest.NFTablesJSON(services, endpoints)))
	if err != nil {
		b.Fatal(err)
	}
	in := dataplane.ObserveInput{Node: "bench", Family: "IPv4",
		NodeIPs: []netip.Addr{netip.MustParseAddr(snapshottest.Node1IP)}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	b.ReportAllocs()
	for b.Loop() {
		t := dataplane.Observe(NewPlane(rs, "IPv4"), in)
		if len(t.Frontends) != services {
			b.Fatalf("%d frontends, want %d", len(t.Frontends), services)
		}
	}
	b.ReportMetric(float64(services), "frontends/op")
}

func BenchmarkObserve1k(b *testing.B)  { benchmarkObserve(b, 1000, 10) }
func BenchmarkObserve10k(b *testing.B) { benchmarkObserve(b, 10000, 10) }

// benchmarkNarrow is a narrow read and what an analysis of one Service
// reads of it before its walks: frontends, settings, checks.
func benchmarkNarrow(b *testing.B, services, endpoints int) {
	node := nodeWith(snapshottest.NFTablesJSON(services, endpoints))
	b.ReportAllocs()
	for b.Loop() {
		pl, err := Loader{}.LoadNarrow(node, "IPv4")
		if err != nil {
			b.Fatal(err)
		}
		p := pl.(*Plane)
		if len(p.Frontends()) != services {
			b.Fatal("frontends missing")
		}
		p.Infer()
		p.Checks("node1", "nftables")
	}
}

func BenchmarkNarrow1k(b *testing.B)  { benchmarkNarrow(b, 1000, 10) }
func BenchmarkNarrow10k(b *testing.B) { benchmarkNarrow(b, 10000, 10) }

// BenchmarkScan10k is the narrow read's split of a 10k-Service document.
func BenchmarkScan10k(b *testing.B) {
	data := []byte(snapshottest.NFTablesJSON(10000, 10))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, ok := scanDocument(data); !ok {
			b.Fatal("scan gave up")
		}
	}
}
