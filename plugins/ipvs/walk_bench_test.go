package ipvs

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// BenchmarkLookup10k walks a packet to each virtual server of a table of
// 10,000 Services (a ClusterIP and a NodePort each, 10 real servers
// apiece), as a check of such a node does for each of its walks: the
// table's lookup is an index, not a scan of its 20,000 virtual servers.
func BenchmarkLookup10k(b *testing.B) {
	var text strings.Builder
	text.WriteString("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	var dsts []netip.AddrPort
	for i := range 10000 {
		vips := []netip.AddrPort{
			netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), 80),
			netip.AddrPortFrom(netip.MustParseAddr("192.0.2.10"), uint16(30000+i%2768)),
		}
		if i >= 2768 {
			vips = vips[:1] // the NodePort range is full
		}
		for _, v := range vips {
			fmt.Fprintf(&text, "TCP  %s rr\n", v)
			for e := range 10 {
				fmt.Fprintf(&text, "  -> 10.%d.%d.%d:8080 Masq 1 0 0\n", 244+e/4, i>>8, byte(i))
			}
			dsts = append(dsts, v)
		}
	}
	tb, err := Parse(text.String())
	if err != nil {
		b.Fatal(err)
	}
	p := &Plane{table: tb, family: "IPv4"}
	w := p.Walker(&dataplane.Env{})
	// A drift's walks keep no hops; explain's do.
	for _, o := range []dataplane.WalkOptions{{NoHops: true}, {}} {
		b.Run(fmt.Sprintf("hops=%v", !o.NoHops), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range dsts {
					pkt := dataplane.Packet{Src: netip.MustParseAddr("10.244.1.20"), Dst: d.Addr(), DstPort: d.Port(), SrcPort: 40000,
						Protocol: "tcp", Entry: dataplane.Prerouting}
					if br := w.WalkWith(pkt, o); len(br) != 10 {
						b.Fatalf("%s: %d branches, want 10", d, len(br))
					}
				}
			}
			b.ReportMetric(float64(len(dsts)), "walks/op")
		})
	}
}
