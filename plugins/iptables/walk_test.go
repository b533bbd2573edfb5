package iptables

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

func loadFixture(t *testing.T) *Ruleset {
	t.Helper()
	data, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseString("node1.iptables-save.txt", string(data), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

var node1 = &Env{LocalAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}

func pkt(src, dst string, port uint16, proto string, entry dataplane.Entry) Packet {
	return Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), DstPort: port, SrcPort: 40000, Protocol: proto, Entry: entry}
}

func TestWalk(t *testing.T) {
	rs := loadFixture(t)
	cases := []struct {
		name string
		env  *Env
		p    Packet
		// want maps a branch summary to its probability.
		want map[string]float64
	}{
		{"clusterIP from a pod", node1, pkt("10.244.0.9", "10.96.94.233", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.0.5:8080": 1.0 / 3, "dnat 10.244.0.6:8080": 1.0 / 3, "dnat 10.244.1.7:8080": 1.0 / 3}},
		{"clusterIP from outside is masqueraded", node1, pkt("198.18.0.1", "10.96.94.233", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.0.5:8080 masq": 1.0 / 3, "dnat 10.244.0.6:8080 masq": 1.0 / 3, "dnat 10.244.1.7:8080 masq": 1.0 / 3}},
		{"hairpin: a pod to itself is masqueraded", node1, pkt("10.244.0.5", "10.96.94.233", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.0.5:8080 masq": 1.0 / 3, "dnat 10.244.0.6:8080": 1.0 / 3, "dnat 10.244.1.7:8080": 1.0 / 3}},
		{"no endpoints: REJECT with kube-proxy's reason", node1, pkt("10.244.0.9", "10.96.0.1", 443, "tcp", dataplane.Prerouting),
			map[string]float64{"REJECT default/kubernetes:https has no endpoints": 1}},
		{"NodePort without endpoints from the node", node1, pkt("192.0.2.10", "192.0.2.10", 30080, "tcp", dataplane.Output),
			map[string]float64{"REJECT default/web-np:http has no endpoints": 1}},
		{"LB IP from an allowed range: local endpoint only", node1, pkt("203.0.113.9", "198.51.100.50", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.0.20:8080 affinity": 1}},
		{"LB IP from elsewhere: dropped by the firewall", node1, pkt("198.18.0.1", "198.51.100.50", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"DROP shop/cart:http traffic not accepted by KUBE-FW-I5LIAMPLWKMBJ54B": 1}},
		{"returning client follows affinity", &Env{LocalAddrs: node1.LocalAddrs, Sticky: map[string]bool{"KUBE-SEP-ENGSELX4FOGUBO5Q": true}},
			pkt("10.244.0.9", "10.96.40.90", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.1.21:8080 affinity": 1}},
		{"UDP and TCP on one port are separate", node1, pkt("10.244.0.9", "10.96.64.120", 53, "udp", dataplane.Prerouting),
			map[string]float64{"dnat 10.244.0.30:5353": 1}},
		{"not a service", node1, pkt("10.244.0.9", "10.96.99.99", 80, "tcp", dataplane.Prerouting),
			map[string]float64{"ACCEPT": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]float64{}
			total := 0.0
			for _, b := range NewWalker(rs, c.env).Walk(c.p) {
				got[summary(b)] += b.Probability
				total += b.Probability
			}
			if total < 0.999999 || total > 1.000001 {
				t.Errorf("branch probabilities add up to %v", total)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, p := range c.want {
				if d := got[k] - p; d > 1e-6 || d < -1e-6 {
					t.Errorf("%s: p=%v, want %v (all: %v)", k, got[k], p, got)
				}
			}
		})
	}
}

func summary(b dataplane.Branch) string {
	switch {
	case b.DNAT != "":
		s := "dnat " + b.DNAT
		if b.Masquerade {
			s += " masq"
		}
		if b.AffinitySeconds > 0 {
			s += " affinity"
		}
		return s
	case b.Verdict == dataplane.Accept:
		return "ACCEPT"
	}
	return strings.TrimSpace(string(b.Verdict) + " " + b.Reason)
}

func TestChainNames(t *testing.T) {
	for _, c := range []struct{ in, proto, want string }{
		{"ns1/svc1:p80", "tcp", "XPGD46QRK7WJZT7O"},
		{"default/nginx:http", "tcp", "P4Q3KNUAWJVP4ILH"},
		{"default/nginx", "tcp", "2CMXP7HKUVJN7L6M"},
		{"shop/cart:http", "TCP", "I5LIAMPLWKMBJ54B"},
	} {
		if got := ServiceChainHash(c.in, c.proto); got != c.want {
			t.Errorf("ServiceChainHash(%q, %q) = %s, want %s", c.in, c.proto, got, c.want)
		}
	}
	if got := EndpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"); got != "KUBE-SEP-SXIVWICOYRO3J4NJ" {
		t.Errorf("EndpointChain = %s", got)
	}
}

func TestSPNFromComment(t *testing.T) {
	for in, want := range map[string]string{
		"default/nginx:http cluster IP":                                          "default/nginx:http",
		"default/nginx:http -> 10.244.0.5:8080":                                  "default/nginx:http",
		"masquerade traffic for shop/dns:dns external destinations":              "shop/dns:dns",
		"other traffic to shop/cart:http will be dropped by KUBE-PROXY-FIREWALL": "shop/cart:http",
		"default/nginx: cluster IP":                                              "default/nginx",
		"default/nginx":                                                          "default/nginx",
		"kubernetes service portals":                                             "",
		"block incoming localnet connections":                                    "",
	} {
		got, ok := SPNFromComment(in)
		if got != want || ok != (want != "") {
			t.Errorf("SPNFromComment(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
