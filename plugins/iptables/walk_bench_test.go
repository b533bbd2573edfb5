package iptables

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// benchmarkWalkProbe walks one probe of drift's lean observation (no hops)
// to a Service of 10 endpoints on a generated node of 1,000 Services: a
// Pod, an outside client, the node itself, or an endpoint reaching itself
// through the Service (the hairpin probe, narrowed to that endpoint). A
// node's drift walks three probes and one hairpin probe per endpoint for
// each frontend.
func benchmarkWalkProbe(b *testing.B, src string, entry dataplane.Entry, hairpin bool) {
	rs, err := ParseString("bench", snapshottest.IPTablesSave(1000, 10), ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p := &Plane{Rules: rs}
	f := p.Frontends()[7]
	w := p.Walker(&dataplane.Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}})
	pkt := dataplane.Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(f.Key.IP), Protocol: "tcp",
		SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: entry}
	o := dataplane.WalkOptions{NoHops: true}
	br := w.WalkWith(pkt, o)
	if len(br) != 10 {
		b.Fatalf("%d branches, want 10", len(br))
	}
	if hairpin {
		o.Toward = netip.MustParseAddrPort(br[0].DNAT)
		pkt.Src = o.Toward.Addr()
	}
	b.ReportAllocs()
	for b.Loop() {
		w.WalkWith(pkt, o)
	}
}

func BenchmarkWalkPod(b *testing.B) {
	benchmarkWalkProbe(b, "10.244.200.1", dataplane.Prerouting, false)
}
func BenchmarkWalkExternal(b *testing.B) {
	benchmarkWalkProbe(b, "203.0.113.9", dataplane.Prerouting, false)
}
func BenchmarkWalkNode(b *testing.B) { benchmarkWalkProbe(b, "192.0.2.10", dataplane.Output, false) }
func BenchmarkWalkHairpin(b *testing.B) {
	benchmarkWalkProbe(b, "10.244.200.1", dataplane.Prerouting, true)
}
