package nftables_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins/nftables"
	"github.com/svctrace/svctrace/snapshot"
)

// kernelLayout parses a node's nft-json dump and reads the kube-proxy
// table of the family off it.
func kernelLayout(t *testing.T, s *snapshot.Snapshot, node, family string) *nftables.Layout {
	t.Helper()
	ns, ok := s.Node(node)
	if !ok {
		t.Fatalf("node %s is not in the snapshot", node)
	}
	for _, d := range ns.Dumps {
		if d.Collector != "nft-json" {
			continue
		}
		rs, err := nftables.Parse(node+" nft-json", []byte(d.Text))
		if err != nil {
			t.Fatalf("parse %s's dump: %v", node, err)
		}
		l, ok := nftables.ReadLayout(rs, family)
		if !ok {
			t.Fatalf("%s: no %s kube-proxy table", node, family)
		}
		return l
	}
	t.Fatalf("node %s has no nft-json dump", node)
	return nil
}

// checkSnapshot renders every node and family of a lab snapshot and
// compares the result with what the real kube-proxy wrote there.
func checkSnapshot(t *testing.T, path string, minor int) {
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"node1", "node2"} {
		for _, family := range []string{"IPv4", "IPv6"} {
			t.Run(node+"/"+family, func(t *testing.T) {
				a, err := analysis.Analyze(s, node, family)
				if err != nil {
					t.Fatal(err)
				}
				if a.View == nil {
					t.Fatal("no model view")
				}
				kernel := kernelLayout(t, s, node, family)
				var ips []string
				for _, ip := range a.NodeIPs {
					ips = append(ips, ip.String())
				}
				set := nftables.SettingsFrom(a.Config, family, ips, kernel)
				if set.Minor != minor {
					t.Errorf("settings read version 1.%d off %q, want 1.%d", set.Minor, a.Config.Version, minor)
					set.Minor = minor
				}
				got, err := nftables.Render(a.View, set)
				if err != nil {
					t.Fatal(err)
				}
				if diffs := got.Equal(kernel); len(diffs) > 0 {
					t.Errorf("rendered table differs from the kernel's (settings %+v):\n%s", set, strings.Join(diffs, "\n"))
				}
				// Equal layouts, but not empty ones: the kernel's table
				// has kube-proxy's 8 base chains, 7 fixed chains and its
				// service-ips map at least.
				if len(kernel.Chains) < 15 || kernel.Sets["service-ips"] == nil {
					t.Errorf("the kernel's table has only %d chains and %d sets", len(kernel.Chains), len(kernel.Sets))
				}
			})
		}
	}
}

func TestRenderMatchesKernel136(t *testing.T) {
	checkSnapshot(t, "../../examples/lab-nftables-v1.36.3.snapshot.yaml", 36)
}

// Equal reports a removed element or rule, and nothing else.
func TestLayoutEqualReportsRemovals(t *testing.T) {
	s, err := snapshot.Load("../../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	read := func() *nftables.Layout { return kernelLayout(t, s, "node1", "IPv4") }
	l := read()
	if d := l.Equal(read()); len(d) != 0 {
		t.Fatalf("a layout differs from itself: %q", d)
	}

	noElem := read()
	ips := noElem.Sets["service-ips"]
	if len(ips.Elements) < 2 {
		t.Fatalf("service-ips has %d elements", len(ips.Elements))
	}
	gone := ips.Elements[1]
	ips.Elements = slices.Delete(ips.Elements, 1, 2)
	want := []string{"set service-ips: element missing: " + gone}
	if d := l.Equal(noElem); !slices.Equal(d, want) {
		t.Errorf("element removed: got %q, want %q", d, want)
	}
	want = []string{"set service-ips: element extra: " + gone}
	if d := noElem.Equal(l); !slices.Equal(d, want) {
		t.Errorf("element added: got %q, want %q", d, want)
	}

	noRule := read()
	svc := noRule.Chains["services"]
	if len(svc.Rules) != 3 {
		t.Fatalf("services has %d rules, want 3", len(svc.Rules))
	}
	gone = svc.Rules[1]
	svc.Rules = slices.Delete(svc.Rules, 1, 2)
	want = []string{"chain services: rule missing: " + gone}
	if d := l.Equal(noRule); !slices.Equal(d, want) {
		t.Errorf("rule removed: got %q, want %q", d, want)
	}

	// Rules compare in order: swapped, one reads as moved.
	swapped := read()
	r := swapped.Chains["services"].Rules
	r[0], r[1] = r[1], r[0]
	if d := l.Equal(swapped); len(d) != 2 {
		t.Errorf("rules swapped: got %q, want one missing and one extra", d)
	}

	noChain := read()
	delete(noChain.Chains, "reject-chain")
	want = []string{"chain reject-chain: missing"}
	if d := l.Equal(noChain); !slices.Equal(d, want) {
		t.Errorf("chain removed: got %q, want %q", d, want)
	}
}

func TestRenderMatchesKernel133(t *testing.T) {
	checkSnapshot(t, "../../examples/lab-nftables-v1.33.13.snapshot.yaml", 33)
}

// The settings read off the kernel's table are the lab's: mark bit 14,
// the cluster CIDR, the Service CIDR, and NodePorts on the node's IPv4
// address only; IPv6 has neither a cluster CIDR nor a Service CIDR, and
// opens NodePorts on every address.
func TestSettingsFromKernel(t *testing.T) {
	s, err := snapshot.Load("../../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v4 := nftables.SettingsFrom(snapshot.ProxyConfig{}, "IPv4", []string{"192.0.2.10"}, kernelLayout(t, s, "node1", "IPv4"))
	want := nftables.RenderSettings{Family: "IPv4", MasqueradeBit: 14, LocalCIDR: "10.244.0.0/16",
		NodePortIPs: []string{"192.0.2.10"}, ServiceCIDRs: []string{"10.96.0.0/16"}, NodeIP: "192.0.2.10"}
	if !reflect.DeepEqual(v4, want) {
		t.Errorf("IPv4 settings %+v, want %+v", v4, want)
	}
	v6 := nftables.SettingsFrom(snapshot.ProxyConfig{NodePortAddresses: []string{"primary"}}, "IPv6", nil, kernelLayout(t, s, "node1", "IPv6"))
	if v6.LocalCIDR != "" || v6.NodePortIPs != nil || v6.ServiceCIDRs != nil || v6.MasqueradeBit != 14 {
		t.Errorf("IPv6 settings %+v", v6)
	}
	// Without the kernel's table, the configuration alone tells.
	bit := int32(3)
	cfg := snapshot.ProxyConfig{Version: "v1.33.13", ClusterCIDRs: []string{"fd00:10:244::/56", "10.244.0.0/16"},
		NodePortAddresses: []string{"192.0.2.0/24"}, MasqueradeBit: &bit}
	got := nftables.SettingsFrom(cfg, "IPv4", []string{"192.0.2.10", "198.51.100.1"}, nil)
	want = nftables.RenderSettings{Family: "IPv4", MasqueradeBit: 3, LocalCIDR: "10.244.0.0/16",
		NodePortIPs: []string{"192.0.2.10"}, NodeIP: "192.0.2.10", Minor: 33}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("settings from the configuration %+v, want %+v", got, want)
	}
}

// Rendered for the other version, the lab's table differs in the ways
// the two versions do.
func TestRenderVersionMatters(t *testing.T) {
	s, err := snapshot.Load("../../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	kernel := kernelLayout(t, s, "node1", "IPv4")
	set := nftables.SettingsFrom(a.Config, "IPv4", []string{"192.0.2.10"}, kernel)
	set.Minor = 33
	got, err := nftables.Render(a.View, set)
	if err != nil {
		t.Fatal(err)
	}
	diffs := got.Equal(kernel)
	for _, want := range []string{
		"chain mark-for-masquerade: missing",
		"set hairpin-connections: extra",
		"chain masquerading: rule missing: masquerade fully-random",
	} {
		if !slices.Contains(diffs, want) {
			t.Errorf("no %q in:\n%s", want, strings.Join(diffs, "\n"))
		}
	}
}

// Chain name bases are cut to 240 characters, the last three "...".
func TestChainBaseTruncated(t *testing.T) {
	long := strings.Repeat("a", 63)
	p := &model.ServicePort{Namespace: long, Name: long, PortName: long, Protocol: "SCTP"}
	if b := nftables.ServiceChainBase(p); len(b) != 8+1+63*3+4+3 || strings.HasSuffix(b, "...") {
		t.Errorf("service base %q: %d characters", b, len(b))
	}
	ep := model.Endpoint{IP: "fd00:1234:5678:9abc:def0:1234:5678:9abc", Port: 65535}
	b := nftables.EndpointChainBase(p, ep)
	if len(b) != 240 || !strings.HasSuffix(b, "...") || strings.Contains(b, ":") {
		t.Errorf("endpoint base %q: %d characters", b, len(b))
	}
}
