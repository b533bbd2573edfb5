package ipvs

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

func planeOf(t *testing.T, text string) *Plane {
	t.Helper()
	tb, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return &Plane{table: tb, family: "IPv4"}
}

func walk(p *Plane, proto, dst string, o dataplane.WalkOptions) []dataplane.Branch {
	ap := netip.MustParseAddrPort(dst)
	pkt := dataplane.Packet{Src: netip.MustParseAddr("10.244.1.20"), Dst: ap.Addr(), DstPort: ap.Port(), SrcPort: 40000, Protocol: proto, Entry: dataplane.Prerouting}
	return p.Walker(&dataplane.Env{}).WalkWith(pkt, o)
}

// shares are the branches as backend=share.
func shares(br []dataplane.Branch) map[string]float64 {
	out := map[string]float64{}
	for _, b := range br {
		out[b.DNAT] += b.Probability
	}
	return out
}

// TestWalkSchedulers: rr shares equally over the servers of weight above
// 0, wrr by weight, fo takes the heaviest; persistence is ClientIP
// affinity; a virtual server with no server to take the connection
// rejects, and a packet to none passes.
func TestWalkSchedulers(t *testing.T) {
	p := planeOf(t, listing+`TCP  10.96.0.20:80 rr
TCP  10.96.0.21:80 rr
  -> 10.244.1.5:8080              Masq    0      0          0
TCP  10.96.0.22:80 fo
  -> 10.244.1.5:8080              Masq    1      0          0
  -> 10.244.2.6:8080              Masq    5      0          0
TCP  10.96.0.23:80 wlc
  -> 10.244.1.5:8080              Masq    1      0          0
  -> 10.244.2.6:8080              Masq    3      0          0
`)
	br := walk(p, "tcp", "10.96.0.10:80", dataplane.WalkOptions{})
	if got := shares(br); len(got) != 1 || got["10.244.1.5:8080"] != 1 {
		t.Errorf("rr with a server at weight 0: %v", got)
	}
	if br[0].AffinitySeconds != 10800 || br[0].AffinityKey != "ipvs TCP 10.96.0.10:80" {
		t.Errorf("persistence: %+v", br[0])
	}
	if len(br[0].Hops) != 2 || br[0].Hops[0].Rule != "TCP 10.96.0.10:80 rr persistent 10800" || br[0].Hops[1].Line != 5 {
		t.Errorf("hops: %+v", br[0].Hops)
	}
	br = walk(p, "udp", "10.96.0.10:53", dataplane.WalkOptions{})
	if got := shares(br); got["10.244.1.7:53"] != 0.75 || got["10.244.2.8:53"] != 0.25 {
		t.Errorf("wrr: %v", got)
	}
	if !strings.Contains(strings.Join(br[1].Notes, " "), "Route forwarding") {
		t.Errorf("direct routing is not said: %v", br[1].Notes)
	}
	for _, c := range []struct{ dst, reason string }{
		{"10.96.0.20:80", "has no real server"},
		{"10.96.0.21:80", "every real server of the virtual server has weight 0"},
	} {
		br := walk(p, "tcp", c.dst, dataplane.WalkOptions{})
		if len(br) != 1 || br[0].Verdict != dataplane.Reject || !strings.Contains(br[0].Reason, c.reason) {
			t.Errorf("%s: %+v", c.dst, br)
		}
	}
	if got := shares(walk(p, "tcp", "10.96.0.22:80", dataplane.WalkOptions{})); len(got) != 1 || got["10.244.2.6:8080"] != 1 {
		t.Errorf("fo: %v", got)
	}
	br = walk(p, "tcp", "10.96.0.23:80", dataplane.WalkOptions{})
	if got := shares(br); got["10.244.2.6:8080"] != 0.75 || !strings.Contains(br[0].Notes[0], "depends on the connections") {
		t.Errorf("wlc: %v %v", got, br[0].Notes)
	}
	if br := walk(p, "tcp", "10.96.0.99:80", dataplane.WalkOptions{}); len(br) != 1 || br[0].Verdict != dataplane.Accept || br[0].DNAT != "" {
		t.Errorf("a packet to no virtual server: %+v", br)
	}
	if br := walk(p, "udp", "10.96.0.10:80", dataplane.WalkOptions{}); br[0].DNAT != "" {
		t.Errorf("the protocol is not part of the lookup: %+v", br)
	}
	br = walk(p, "udp", "10.96.0.10:53", dataplane.WalkOptions{Toward: netip.MustParseAddrPort("10.244.2.8:53"), NoHops: true})
	if len(br) != 1 || br[0].DNAT != "10.244.2.8:53" || br[0].Hops != nil {
		t.Errorf("toward one server, without hops: %+v", br)
	}
}

// TestFrontendsAndLeftovers: a virtual server on a node address is a
// NodePort; a firewall-mark service is no frontend; the table is a
// leftover when kube-proxy runs in another mode.
func TestFrontendsAndLeftovers(t *testing.T) {
	p := planeOf(t, listing+"TCP  192.0.2.10:30080 rr\n")
	p.nodeAddrs = map[netip.Addr]bool{netip.MustParseAddr("192.0.2.10"): true}
	var keys []string
	for _, f := range p.Frontends() {
		keys = append(keys, f.Key.String())
	}
	want := "ClusterIP 10.96.0.10:80/TCP ClusterIP 10.96.0.10:53/UDP ClusterIP fd00:10:96::a:443/TCP NodePort 192.0.2.10:30080/TCP"
	if strings.Join(keys, " ") != want {
		t.Errorf("frontends %q, want %q", strings.Join(keys, " "), want)
	}
	if fs := p.Leftovers("node1", "ipvs"); len(fs) != 0 {
		t.Errorf("leftovers in ipvs mode: %+v", fs)
	}
	if fs := p.Leftovers("node1", "nftables"); len(fs) != 1 || !strings.Contains(fs[0].Message, "5 IPVS virtual servers") {
		t.Errorf("leftovers in nftables mode: %+v", fs)
	}
}
