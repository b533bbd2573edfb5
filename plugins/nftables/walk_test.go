package nftables

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

const (
	affCartHTTP21 = "affinity-IILHGPM4-shop/cart/tcp/http__10.244.1.21/8080"
	affCartHTTP20 = "affinity-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080"
)

// walkCase is one packet and what node2 does with it. The same cases hold
// for kube-proxy v1.33 and v1.36: the layouts differ, the behaviour not.
type walkCase struct {
	name   string
	pkt    dataplane.Packet
	sticky []string
	// verdict of every branch; backends (DNAT -> probability) when it
	// forwards.
	verdict  dataplane.Verdict
	backends map[string]float64
	// masq per backend; nil: no branch is masqueraded.
	masq map[string]bool
	// reason: a substring of every branch's reason.
	reason   string
	affinity int32
	affKey   string
	// via: a substring of some hop's chain on every branch.
	via string
	// sources: prefixes every branch tested the source against.
	sources []string
}

func walkCases() []walkCase {
	thirds := map[string]float64{"10.244.0.5:8080": 1.0 / 3, "10.244.0.6:8080": 1.0 / 3, "10.244.1.7:8080": 1.0 / 3}
	allMasq := map[string]bool{"10.244.0.5:8080": true, "10.244.0.6:8080": true, "10.244.1.7:8080": true}
	fromNode := pkt("192.0.2.11", "10.96.94.233", "tcp", 80)
	fromNode.Entry = dataplane.Output
	nodeToLB := pkt("192.0.2.11", "198.51.100.50", "tcp", 80)
	nodeToLB.Entry = dataplane.Output
	return []walkCase{
		{name: "nginx ClusterIP from a pod", pkt: pkt("10.244.1.99", "10.96.94.233", "tcp", 80),
			verdict: dataplane.Accept, backends: thirds, sources: []string{"10.244.0.0/16"}},
		{name: "nginx ClusterIP from outside the cluster", pkt: pkt("198.18.0.1", "10.96.94.233", "tcp", 80),
			verdict: dataplane.Accept, backends: thirds, masq: allMasq, sources: []string{"10.244.0.0/16"}},
		{name: "nginx ClusterIP from the node", pkt: fromNode,
			verdict: dataplane.Accept, backends: thirds, masq: allMasq},
		{name: "nginx ClusterIP hairpin from its own endpoint", pkt: pkt("10.244.1.7", "10.96.94.233", "tcp", 80),
			verdict: dataplane.Accept, backends: thirds, masq: map[string]bool{"10.244.1.7:8080": true}},
		{name: "cart LB from an allowed client: local endpoint only", pkt: pkt("203.0.113.9", "198.51.100.50", "tcp", 80),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.21:8080": 1},
			affinity: 10800, affKey: affCartHTTP21, via: "local-242WI43H-shop/cart/tcp/http", sources: []string{"203.0.113.0/24"}},
		{name: "cart LB from outside the source ranges", pkt: pkt("198.18.0.1", "198.51.100.50", "tcp", 80),
			verdict: dataplane.Drop, reason: "firewall-242WI43H-shop/cart/tcp/http", sources: []string{"203.0.113.0/24"}},
		{name: "cart LB from the node (not in the source ranges)", pkt: nodeToLB,
			verdict: dataplane.Drop, reason: "firewall-242WI43H-shop/cart/tcp/http"},
		{name: "cart LB from a returning client", pkt: pkt("203.0.113.9", "198.51.100.50", "tcp", 80), sticky: []string{affCartHTTP21},
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.21:8080": 1}, affinity: 10800, affKey: affCartHTTP21},
		{name: "cart LB: a remote endpoint's affinity does not apply to external traffic", pkt: pkt("203.0.113.9", "198.51.100.50", "tcp", 80),
			sticky: []string{affCartHTTP20}, verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.21:8080": 1}, affinity: 10800, affKey: affCartHTTP21},
		{name: "cart ClusterIP from a new pod client", pkt: pkt("10.244.1.99", "10.96.40.90", "tcp", 80),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.0.20:8080": 0.5, "10.244.1.21:8080": 0.5}, affinity: 10800},
		{name: "cart ClusterIP from a returning pod client", pkt: pkt("10.244.1.99", "10.96.40.90", "tcp", 80), sticky: []string{affCartHTTP20},
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.0.20:8080": 1}, affinity: 10800, affKey: affCartHTTP20},
		{name: "cart metrics port", pkt: pkt("203.0.113.9", "198.51.100.50", "tcp", 9090),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.21:9090": 1}, affinity: 10800, via: "metrics"},
		{name: "kubernetes has no endpoints", pkt: pkt("10.244.1.99", "10.96.0.1", "tcp", 443),
			verdict: dataplane.Reject, reason: "default/kubernetes:https has no endpoints"},
		{name: "web-np ClusterIP has no endpoints", pkt: pkt("10.244.1.99", "10.96.84.163", "tcp", 8081),
			verdict: dataplane.Reject, reason: "default/web-np:http has no endpoints"},
		// nodeport-ips is empty in both captures (the node's InternalIP
		// was only patched into its status, so kube-proxy found no local
		// address for "primary"): no NodePort is open.
		{name: "web-np NodePort: nodeport-ips is empty, not handled", pkt: pkt("203.0.113.9", "192.0.2.11", "tcp", 30080),
			verdict: dataplane.Accept},
		{name: "cart NodePort: nodeport-ips is empty, not handled", pkt: pkt("203.0.113.9", "192.0.2.11", "tcp", 32296),
			verdict: dataplane.Accept},
		{name: "dns UDP ClusterIP: local endpoint (ITP Local)", pkt: pkt("10.244.1.99", "10.96.64.120", "udp", 53),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.31:5353": 1}, via: "local-WB2QITPI-shop/dns/udp/dns"},
		{name: "dns TCP ClusterIP: its own chain", pkt: pkt("10.244.1.99", "10.96.64.120", "tcp", 53),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.31:5353": 1}, via: "local-CYI7CYQE-shop/dns/tcp/dns-tcp"},
		{name: "dns UDP external IP", pkt: pkt("203.0.113.9", "198.51.100.7", "udp", 53),
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.0.30:5353": 0.5, "10.244.1.31:5353": 0.5},
			masq: map[string]bool{"10.244.0.30:5353": true, "10.244.1.31:5353": true}, via: "external-WB2QITPI-shop/dns/udp/dns"},
		{name: "dns SCTP: no such port", pkt: pkt("10.244.1.99", "10.96.64.120", "sctp", 53),
			verdict: dataplane.Reject, reason: "Reject traffic to invalid ports of ClusterIPs"},
		{name: "unallocated ClusterIP", pkt: pkt("10.244.1.99", "10.96.200.1", "tcp", 80),
			verdict: dataplane.Drop, reason: "Drop traffic to unallocated ClusterIPs"},
		{name: "not a service", pkt: pkt("10.244.1.99", "203.0.113.77", "tcp", 80), verdict: dataplane.Accept},
	}
}

func TestWalkCaptures(t *testing.T) {
	for _, path := range captures() {
		rs := mustParse(t, path, readCapture(t, path))
		p := NewPlane(rs, "IPv4")
		for _, c := range walkCases() {
			t.Run(version(path)+"/"+c.name, func(t *testing.T) {
				br := p.Walker(node2Env(c.sticky...)).Walk(c.pkt)
				checkWalk(t, br, c)
			})
		}
	}
}

func checkWalk(t *testing.T, br []dataplane.Branch, c walkCase) {
	t.Helper()
	if len(br) == 0 {
		t.Fatal("no branches")
	}
	total := 0.0
	for _, b := range br {
		total += b.Probability
		ctx := "\n" + hopsText(b)
		if b.Verdict != c.verdict {
			t.Errorf("verdict %s, want %s (reason %q)%s", b.Verdict, c.verdict, b.Reason, ctx)
		}
		if c.backends == nil && b.DNAT != "" {
			t.Errorf("DNAT to %s, want none%s", b.DNAT, ctx)
		}
		if b.DNAT != "" && b.Masquerade != c.masq[b.DNAT] {
			t.Errorf("%s: masquerade %v, want %v%s", b.DNAT, b.Masquerade, c.masq[b.DNAT], ctx)
		}
		if !strings.Contains(b.Reason, c.reason) {
			t.Errorf("reason %q, want it to contain %q", b.Reason, c.reason)
		}
		if b.AffinitySeconds != c.affinity {
			t.Errorf("%s: affinity %d s, want %d", b.DNAT, b.AffinitySeconds, c.affinity)
		}
		if c.affKey != "" && b.AffinityKey != c.affKey {
			t.Errorf("affinity key %q, want %q", b.AffinityKey, c.affKey)
		}
		if c.via != "" && !viaChain(b, c.via) {
			t.Errorf("no hop in a chain containing %q%s", c.via, ctx)
		}
		for _, s := range c.sources {
			if !hasPrefix(b.SourcePrefixes, s) {
				t.Errorf("source prefixes %v lack %s", b.SourcePrefixes, s)
			}
		}
		if len(b.Notes) > 0 {
			t.Errorf("notes: %v", b.Notes)
		}
	}
	if !near(total, 1) {
		t.Errorf("probabilities sum to %v", total)
	}
	got := backends(br)
	if len(got) != len(c.backends) {
		t.Errorf("backends %v, want %v", got, c.backends)
	}
	for ep, want := range c.backends {
		if !near(got[ep], want) {
			t.Errorf("backend %s: probability %v, want %v", ep, got[ep], want)
		}
	}
}

func viaChain(b dataplane.Branch, s string) bool {
	for _, h := range b.Hops {
		if strings.Contains(h.Chain, s) {
			return true
		}
	}
	return false
}

func hasPrefix(ps []netip.Prefix, s string) bool {
	for _, p := range ps {
		if p.String() == s {
			return true
		}
	}
	return false
}

// TestWalkHops checks what a hop records: the rule text, its handle, the
// element matched and the random share.
func TestWalkHops(t *testing.T) {
	for _, path := range captures() {
		p := NewPlane(mustParse(t, path, readCapture(t, path)), "IPv4")
		br := p.Walker(node2Env()).Walk(pkt("10.244.1.99", "10.96.94.233", "tcp", 80))
		var dispatch, random *dataplane.Hop
		for i, h := range br[0].Hops {
			if h.Chain == "services" && strings.Contains(h.Rule, "vmap @service-ips") {
				dispatch = &br[0].Hops[i]
			}
			if h.Probability > 0 {
				random = &br[0].Hops[i]
			}
		}
		if dispatch == nil || random == nil {
			t.Fatalf("%s: hops lack the dispatch or the random choice:\n%s", version(path), hopsText(br[0]))
		}
		if dispatch.Rule != "ip daddr . meta l4proto . th dport vmap @service-ips" || dispatch.Table != "ip kube-proxy" || dispatch.Line == 0 {
			t.Errorf("%s: dispatch hop %+v", version(path), *dispatch)
		}
		if dispatch.Element != "10.96.94.233 . tcp . 80 : goto service-2ETI3MDI-default/nginx/tcp/http" {
			t.Errorf("%s: dispatch element %q", version(path), dispatch.Element)
		}
		if !near(random.Probability, 1.0/3) || !strings.HasPrefix(random.Element, "0 : ") || !strings.Contains(random.Rule, "numgen random mod 3") {
			t.Errorf("%s: random hop %+v", version(path), *random)
		}
	}
}

// TestWalkFamilies: an IPv6 packet in the IPv4 plane is seen by no table,
// and the IPv6 plane of the captures handles nothing.
func TestWalkFamilies(t *testing.T) {
	rs := mustParse(t, "capture", readCapture(t, captures()[0]))
	br := NewPlane(rs, "IPv4").Walker(nil).Walk(pkt("fd00::1", "fd00::2", "tcp", 80))
	if len(br) != 1 || br[0].Verdict != dataplane.Accept || len(br[0].Notes) == 0 {
		t.Errorf("IPv6 packet in the IPv4 plane: %+v", br)
	}
	p6 := NewPlane(rs, "IPv6")
	if !p6.HasKubeProxy() || p6.Mode() != "nftables" {
		t.Errorf("IPv6 plane: HasKubeProxy %v, mode %s", p6.HasKubeProxy(), p6.Mode())
	}
	br = p6.Walker(nil).Walk(pkt("fd00::1", "fd00:96::1", "tcp", 80))
	if len(br) != 1 || br[0].Verdict != dataplane.Accept || br[0].DNAT != "" {
		t.Errorf("IPv6 walk: %+v", br)
	}
}
