package behavior

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

func TestChooseProbes(t *testing.T) {
	cidrs := ParsePrefixes([]string{"10.244.0.0/16"})
	node := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	for _, c := range []struct {
		name                        string
		ranges                      []string
		pod, nodeSrc, external, out string
	}{
		{"no ranges", nil, "10.244.255.254", "192.0.2.10", "198.18.255.254", "198.19.255.254"},
		{"a range outside the cluster", []string{"203.0.113.0/24"}, "10.244.255.254", "192.0.2.10", "203.0.113.254", "198.19.255.254"},
		{"a range inside the cluster CIDR", []string{"10.244.3.0/24"}, "10.244.3.254", "192.0.2.10", "198.18.255.254", "198.19.255.254"},
		{"a range covering the first outside candidate", []string{"198.18.0.0/15"}, "10.244.255.254", "192.0.2.10", "198.19.255.254", "192.0.0.254"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ChooseProbes(cidrs, node, ParsePrefixes(c.ranges))
			got := []string{p.Pod.String(), p.Node.String(), p.External.String(), p.Outside.String()}
			want := []string{c.pod, c.nodeSrc, c.external, c.out}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("probes = %v, want %v", got, want)
					break
				}
			}
			// A range inside the cluster CIDR admits no outside client.
			if c.name != "a range inside the cluster CIDR" && !Allowed(p.External, ParsePrefixes(c.ranges)) {
				t.Errorf("the external probe %s is not allowed by %v", p.External, c.ranges)
			}
			if len(c.ranges) > 0 && Allowed(p.Outside, ParsePrefixes(c.ranges)) {
				t.Errorf("the outside probe %s is allowed by %v", p.Outside, c.ranges)
			}
		})
	}
}

func TestLastHost(t *testing.T) {
	for in, want := range map[string]string{
		"10.244.0.0/16":  "10.244.255.254",
		"203.0.113.0/24": "203.0.113.254",
		"192.0.2.7/32":   "192.0.2.7",
		"192.0.2.6/31":   "192.0.2.7",
		"fd00::/64":      "fd00::ffff:ffff:ffff:fffe",
	} {
		if got := LastHost(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("LastHost(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestMergeFindings(t *testing.T) {
	in := []Finding{
		{Type: MissingEndpoint, Node: "n1", Service: "a/b:http", Expected: "10.0.0.1:80", Observed: "absent", Frontends: []string{"ClusterIP 1"}, Sources: []string{"pod"}},
		{Type: MissingEndpoint, Node: "n1", Service: "a/b:http", Expected: "10.0.0.1:80", Observed: "absent", Frontends: []string{"NodePort 2"}, Sources: []string{"pod", "node"}},
		{Type: StaleEndpoint, Node: "n1", Service: "a/a:http", Expected: "absent", Observed: "10.0.0.9:80"},
	}
	out := Merge(in)
	if len(out) != 2 {
		t.Fatalf("merged into %d findings, want 2: %+v", len(out), out)
	}
	if out[0].Service != "a/a:http" {
		t.Errorf("not sorted by service: %+v", out)
	}
	if got := out[1].Frontends; len(got) != 2 || got[0] != "ClusterIP 1" || got[1] != "NodePort 2" {
		t.Errorf("frontends = %v", got)
	}
	if got := out[1].Sources; len(got) != 2 {
		t.Errorf("sources = %v", got)
	}
}

func TestFormatProbability(t *testing.T) {
	for p, want := range map[float64]string{1: "1", 0.5: "1/2", 1.0 / 3: "1/3", 2.0 / 3: "2/3", 0.1: "1/10", 0.123456: "0.1235"} {
		if got := FormatProbability(p); got != want {
			t.Errorf("FormatProbability(%v) = %s, want %s", p, got, want)
		}
	}
}

// TestProbeSpaceAvoidsTaken: no probe stands on an endpoint (it would see
// its own hairpin masquerade), a node address or a loopback address (a
// packet from one of them arriving on an interface is the node itself, or
// a martian).
func TestProbeSpaceAvoidsTaken(t *testing.T) {
	taken := map[netip.Addr]bool{
		netip.MustParseAddr("10.244.255.254"): true,
		netip.MustParseAddr("10.244.255.253"): true,
		netip.MustParseAddr("203.0.113.254"):  true,
	}
	s := ProbeSpace{
		ClusterCIDRs: ParsePrefixes([]string{"10.244.0.0/16"}),
		NodeIPs:      []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.254")},
		Taken:        taken,
	}
	p := s.Choose(ParsePrefixes([]string{"203.0.113.0/24"}))
	if got := p.Pod.String(); got != "10.244.255.252" {
		t.Errorf("pod probe = %s, want 10.244.255.252 (the last free host)", got)
	}
	if got := p.External.String(); got != "203.0.113.253" {
		t.Errorf("external probe = %s, want 203.0.113.253", got)
	}
	if got := p.Node.String(); got != "192.0.2.10" {
		t.Errorf("node probe = %s, want the primary node address", got)
	}
	if a, ok := s.FreeHost(netip.MustParsePrefix("192.0.2.0/24")); !ok || a.String() != "192.0.2.253" {
		t.Errorf("free host of the node's subnet = %s %v, want 192.0.2.253 (192.0.2.254 is the node)", a, ok)
	}
	if a, ok := s.FreeHost(netip.MustParsePrefix("127.0.0.0/8")); ok {
		t.Errorf("a loopback range gave probe %s: loopback sources are the node", a)
	}
	if _, ok := s.FreeHost(netip.MustParsePrefix("10.244.255.254/32")); ok {
		t.Error("a single taken address gave a probe")
	}
}

// TestFreeHostTakenSorted: with the taken addresses in TakenSorted (a
// partial snapshot's), FreeHost finds what a search of every address from
// the top finds, through runs of taken addresses and the other kinds.
func TestFreeHostTakenSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for round := range 200 {
		p := netip.MustParsePrefix("10.244.0.0/22")
		taken := map[netip.Addr]bool{}
		var sorted []netip.Addr
		a := LastHost(p)
		for range rng.IntN(1100) { // runs down from the top, with gaps
			if rng.IntN(50) > 0 {
				sorted = append(sorted, a)
				taken[a] = true
			}
			a = a.Prev()
		}
		slices.SortFunc(sorted, netip.Addr.Compare)
		other := LastHost(p).Prev().Prev()
		s := NewProbeSpace(nil, []netip.Addr{other}, nil)
		s.TakenSorted = sorted
		want, wantOK := netip.Addr{}, false
		for a := LastHost(p); p.Contains(a); a = a.Prev() {
			if !taken[a] && a != other {
				want, wantOK = a, true
				break
			}
		}
		if got, ok := s.FreeHost(p); got != want || ok != wantOK {
			t.Fatalf("round %d (%d taken): %v %v, want %v %v", round, len(sorted), got, ok, want, wantOK)
		}
	}
}

// TestProbeSpacePodCIDR: where the node's own pod range is known, the pod
// probe is a pod of this node (a CNI's rules, such as flannel's masquerade,
// tell it from a pod elsewhere in the cluster CIDR); a pod range outside
// the cluster CIDR is not the detector's, and is not used.
func TestProbeSpacePodCIDR(t *testing.T) {
	s := ProbeSpace{ClusterCIDRs: ParsePrefixes([]string{"10.244.0.0/16"}), PodCIDRs: ParsePrefixes([]string{"10.244.1.0/24"}),
		Taken: map[netip.Addr]bool{netip.MustParseAddr("10.244.1.254"): true}}
	if got := s.Choose(nil).Pod.String(); got != "10.244.1.253" {
		t.Errorf("pod probe = %s, want 10.244.1.253 (the node's pod range, its last free host)", got)
	}
	s.PodCIDRs = ParsePrefixes([]string{"10.99.1.0/24"})
	if got := s.Choose(nil).Pod.String(); got != "10.244.255.254" {
		t.Errorf("pod probe = %s, want 10.244.255.254 (a pod range outside the cluster CIDR is not used)", got)
	}
}
