package reconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/svctrace/snapshot"
)

// labSnapshots are snapshots a real kube-proxy v1.36.3 programmed, one
// per mode a repair writes by restoring text.
var labSnapshots = map[string]string{
	"iptables": "../examples/lab-iptables-v1.36.3.snapshot.yaml",
	"nftables": "../examples/lab-nftables-v1.36.3.snapshot.yaml",
}

// hostile is an edit of a snapshot that puts a value no rule may hold
// where a plane would render it, and what the refusal must name.
type hostile struct {
	name string
	edit func(t *testing.T, s *snapshot.Snapshot, ns *snapshot.NodeState)
	// want are the parts of the error: the object, the field, the value.
	want []string
}

func ptr[T any](v T) *T { return &v }

// webService is default/web of the lab snapshots.
func webService(t *testing.T, s *snapshot.Snapshot) *corev1.Service {
	t.Helper()
	for i := range s.Cluster.Services {
		if svc := &s.Cluster.Services[i]; svc.Namespace == "default" && svc.Name == "web" {
			return svc
		}
	}
	t.Fatal("default/web is not in the snapshot")
	return nil
}

// The attacks of issue 32: a fake /configz's interface names, and
// objects given in a file.
func hostileInputs() []hostile {
	configz := func(f func(c *snapshot.ProxyConfig)) func(*testing.T, *snapshot.Snapshot, *snapshot.NodeState) {
		return func(_ *testing.T, _ *snapshot.Snapshot, ns *snapshot.NodeState) { f(&ns.KubeProxy) }
	}
	web := func(f func(svc *corev1.Service)) func(*testing.T, *snapshot.Snapshot, *snapshot.NodeState) {
		return func(t *testing.T, s *snapshot.Snapshot, _ *snapshot.NodeState) { f(webService(t, s)) }
	}
	return []hostile{
		{"interfaceNamePrefix injects iptables rules", configz(func(c *snapshot.ProxyConfig) {
			c.DetectLocalMode, c.InterfaceNamePrefix = "InterfaceNamePrefix", "eth0+ -j ACCEPT\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n#"
		}), []string{"interfaceNamePrefix", `"eth0+ -j ACCEPT\n-A INPUT -s 6.6.6.6/32 -j ACCEPT\n#"`}},
		{"bridgeInterface injects an nft table", configz(func(c *snapshot.ProxyConfig) {
			c.DetectLocalMode, c.BridgeInterface = "BridgeInterface", "\"; }\ntable ip evil { chain c { type filter hook input priority 0; accept; } }\n#"
		}), []string{"bridgeInterface", `table ip evil`}},
		{"bridgeInterface with a quote", configz(func(c *snapshot.ProxyConfig) {
			c.DetectLocalMode, c.BridgeInterface = "BridgeInterface", `br"0`
		}), []string{"bridgeInterface", `"br\"0"`}},
		{"interfaceNamePrefix too long", configz(func(c *snapshot.ProxyConfig) {
			c.DetectLocalMode, c.InterfaceNamePrefix = "InterfaceNamePrefix", "abcdefghijklmno"
		}), []string{"interfaceNamePrefix", "longer than 14 bytes"}},
		{"masquerade bit 32", configz(func(c *snapshot.ProxyConfig) { c.MasqueradeBit = ptr(int32(32)) }),
			[]string{"masqueradeBit", `"32"`}},
		{"masquerade bit -1", configz(func(c *snapshot.ProxyConfig) { c.MasqueradeBit = ptr(int32(-1)) }),
			[]string{"masqueradeBit", `"-1"`}},
		{"clusterCIDR with a rule", configz(func(c *snapshot.ProxyConfig) { c.ClusterCIDRs = []string{"10.244.0.0/16 -j ACCEPT"} }),
			[]string{"clusterCIDRs[0]", "is not a CIDR"}},
		{"nodePortAddresses with a rule", configz(func(c *snapshot.ProxyConfig) { c.NodePortAddresses = []string{"0.0.0.0/0 -j ACCEPT"} }),
			[]string{"nodePortAddresses[0]", "is not a CIDR"}},
		{"Service name with a quote and a newline", web(func(svc *corev1.Service) { svc.Name = "web\"\n-A INPUT -j ACCEPT" }),
			[]string{"metadata.name", `"web\"\n-A INPUT -j ACCEPT"`, "DNS-1123"}},
		{"namespace with a quote", web(func(svc *corev1.Service) { svc.Namespace = `def"ault` }),
			[]string{"metadata.namespace", `"def\"ault"`}},
		{"port name with a backslash", web(func(svc *corev1.Service) { svc.Spec.Ports[0].Name = `ht\tp` }),
			[]string{"spec.ports[].name", `"ht\\tp"`}},
		{"clusterIP with a rule", web(func(svc *corev1.Service) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs[0] = "10.96.0.9/32 -j ACCEPT", "10.96.0.9/32 -j ACCEPT"
		}), []string{"service default/web", "spec.clusterIP", `"10.96.0.9/32 -j ACCEPT"`, "is not an IP address"}},
		{"clusterIP with a zone", web(func(svc *corev1.Service) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs[0] = "10.96.0.9%eth0", "10.96.0.9%eth0"
		}), []string{"spec.clusterIP", "zone"}},
		{"externalIP with a rule", web(func(svc *corev1.Service) { svc.Spec.ExternalIPs = []string{"198.51.100.7 -j ACCEPT"} }),
			[]string{"spec.externalIPs[0]", "is not an IP address"}},
		{"source range with a rule", web(func(svc *corev1.Service) { svc.Spec.LoadBalancerSourceRanges = []string{"0.0.0.0/0 -j ACCEPT"} }),
			[]string{"spec.loadBalancerSourceRanges[0]", "is not a CIDR"}},
		{"port 0", web(func(svc *corev1.Service) { svc.Spec.Ports[0].Port = 0 }), []string{"spec.ports[].port", `"0"`}},
		{"port 65536", web(func(svc *corev1.Service) { svc.Spec.Ports[0].Port = 65536 }), []string{"spec.ports[].port", `"65536"`}},
		{"port -1", web(func(svc *corev1.Service) { svc.Spec.Ports[0].Port = -1 }), []string{"spec.ports[].port", `"-1"`}},
		{"nodePort 65536", web(func(svc *corev1.Service) { svc.Spec.Ports[0].NodePort = 65536 }), []string{"spec.ports[].nodePort", `"65536"`}},
		{"protocol", web(func(svc *corev1.Service) { svc.Spec.Ports[0].Protocol = "tcp -j ACCEPT" }), []string{"spec.ports[].protocol"}},
		{"endpoint with a zone", func(t *testing.T, s *snapshot.Snapshot, _ *snapshot.NodeState) {
			for i := range s.Cluster.EndpointSlices {
				if es := &s.Cluster.EndpointSlices[i]; es.Namespace == "default" && es.Name == "web-1" {
					es.Endpoints[0].Addresses[0] = "10.244.0.7%eth0"
					return
				}
			}
			t.Fatal("EndpointSlice default/web-1 is not in the snapshot")
		}, []string{"EndpointSlice web-1", `"10.244.0.7%eth0"`, "zone"}},
	}
}

// A plan refuses, in each mode, every value of the configuration or the
// objects that is not what its field says, naming the object, the field
// and the value: before any plane renders it.
func TestPlanRefusesHostileValues(t *testing.T) {
	for mode, file := range labSnapshots {
		for _, h := range hostileInputs() {
			t.Run(mode+"/"+h.name, func(t *testing.T) {
				s, err := snapshot.Load(file)
				if err != nil {
					t.Fatal(err)
				}
				ns := &s.Nodes[0]
				h.edit(t, s, ns)
				p, err := PlanRules(s, RulesOptions{Node: ns.Name})
				if err == nil {
					for _, f := range p.Families {
						t.Logf("%s payload:\n%s", f.Family, f.Payload)
					}
					t.Fatal("planned; want a refusal")
				}
				for _, w := range append(h.want, "refusing to render it") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
			})
		}
	}
}

// The values kube-proxy and the API take pass.
func TestValidValuesPass(t *testing.T) {
	for _, tc := range []struct{ value, why string }{
		{checkAddr("10.96.0.9", "IPv4"), "IPv4"},
		{checkAddr("fd00::9", "IPv6"), "IPv6"},
		{checkPrefix("10.244.0.1/16", ""), "unmasked CIDR"},
		{checkPort(65535, false), "port 65535"},
		{checkPort(0, true), "no NodePort"},
		{checkName("web-1"), "name"},
		{checkIfaceName("cni0", maxIfaceName), "bridge"},
		{checkIfaceName("veth", maxIfaceName-1), "prefix"},
		{checkIfaceName("abcdefghijklmno", maxIfaceName), "15 bytes"},
	} {
		if tc.value != "" {
			t.Errorf("%s: %s", tc.why, tc.value)
		}
	}
	for _, tc := range []struct{ value, why string }{
		{checkAddr("10.96.0.9", "IPv6"), "IPv4 in IPv6"},
		{checkAddr("::ffff:10.96.0.9", "IPv6"), "4in6"},
		{checkAddr("fe80::1%eth0", ""), "zone"},
		{checkPort(0, false), "port 0"},
		{checkPort(-1, true), "NodePort -1"},
		{checkName("Web"), "upper case"},
		{checkIfaceName("..", maxIfaceName), ".."},
		{checkIfaceName("a/b", maxIfaceName), "slash"},
		{checkIfaceName("eth0:1", maxIfaceName), "colon"},
		{checkIfaceName("eth\x00", maxIfaceName), "NUL"},
		{checkIfaceName("-j", maxIfaceName), "leading dash"},
		{checkIfaceName("", maxIfaceName), "empty"},
	} {
		if tc.value == "" {
			t.Errorf("%s: passed", tc.why)
		}
	}
}
