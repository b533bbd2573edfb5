package ipvs

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/model"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// testView is a node's view with a NodePort Service whose endpoints are
// the node's own address (host network) and a Pod elsewhere, and a load
// balancer with Local policy, source ranges that leave the node out, and
// no endpoint on the node.
func testView() *model.NodeView {
	local := model.Endpoint{IP: "192.0.2.10", Port: 8080, Ready: true, Serving: true, Local: true, NodeName: "n1"}
	remote := model.Endpoint{IP: "10.244.1.5", Port: 8080, Ready: true, Serving: true, NodeName: "n2"}
	lbEP := model.Endpoint{IP: "10.244.2.7", Port: 8080, Ready: true, Serving: true, NodeName: "n2"}
	return &model.NodeView{Node: "n1", Family: "IPv4", NodeIPs: []string{"192.0.2.10"}, Ports: []model.ServicePort{
		{Namespace: "default", Name: "web", PortName: "http", Protocol: "TCP", Port: 80, NodePort: 30080, ClusterIP: "10.96.0.10",
			ExternallyAccessible: true, Endpoints: []model.Endpoint{remote, local}, ClusterEndpoints: []model.Endpoint{remote, local}},
		{Namespace: "default", Name: "lb", PortName: "http", Protocol: "TCP", Port: 80, NodePort: 30081, ClusterIP: "10.96.0.11",
			LoadBalancerIPs: []string{"198.51.100.5"}, LoadBalancerSourceRanges: []string{"203.0.113.0/24"}, ExternalPolicyLocal: true,
			HealthCheckNodePort: 32000, ExternallyAccessible: true, AffinityTimeoutSeconds: 10800,
			Endpoints: []model.Endpoint{lbEP}, ClusterEndpoints: []model.Endpoint{lbEP}, LocalEndpoints: []model.Endpoint{}},
	}}
}

func TestRender(t *testing.T) {
	tg := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14, RandomFully: true,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	var got []string
	for _, v := range tg.Virtuals {
		got = append(got, v.String())
		for _, r := range v.Reals {
			got = append(got, "  "+r.String())
		}
	}
	want := []string{
		"TCP 10.96.0.10:80 rr", "  -> 10.244.1.5:8080 Masq 1", "  -> 192.0.2.10:8080 Masq 1",
		"TCP 192.0.2.10:30080 rr", "  -> 10.244.1.5:8080 Masq 1", "  -> 192.0.2.10:8080 Masq 1",
		"TCP 10.96.0.11:80 rr persistent 10800", "  -> 10.244.2.7:8080 Masq 1",
		// Local with no local endpoint: ipvs mode falls back to the cluster's.
		"TCP 198.51.100.5:80 rr persistent 10800", "  -> 10.244.2.7:8080 Masq 1",
		"TCP 192.0.2.10:30081 rr persistent 10800", "  -> 10.244.2.7:8080 Masq 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("virtual servers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := tg.Addrs; len(a) != 3 || a[0].String() != "10.96.0.10/32" || a[2].String() != "198.51.100.5/32" {
		t.Errorf("kube-ipvs0: %v", a)
	}
	members := func(set string) []string {
		var out []string
		for _, m := range tg.Sets[set].Members {
			out = append(out, m.Text)
		}
		slices.Sort(out)
		return out
	}
	for set, want := range map[string][]string{
		"KUBE-CLUSTER-IP":                {"10.96.0.10,tcp:80", "10.96.0.11,tcp:80"},
		"KUBE-LOOP-BACK":                 {"192.0.2.10,tcp:8080,192.0.2.10"},
		"KUBE-NODE-PORT-TCP":             {"30080", "30081"},
		"KUBE-NODE-PORT-LOCAL-TCP":       {"30081"},
		"KUBE-LOAD-BALANCER":             {"198.51.100.5,tcp:80"},
		"KUBE-LOAD-BALANCER-LOCAL":       {"198.51.100.5,tcp:80"},
		"KUBE-LOAD-BALANCER-FW":          {"198.51.100.5,tcp:80"},
		"KUBE-LOAD-BALANCER-SOURCE-CIDR": {"198.51.100.5,tcp:80,203.0.113.0/24"},
		"KUBE-LOAD-BALANCER-SOURCE-IP":   nil,
		"KUBE-HEALTH-CHECK-NODE-PORT":    {"32000"},
		"KUBE-IPVS-IPS":                  {"10.96.0.10", "10.96.0.11", "198.51.100.5"},
	} {
		if got := members(set); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", set, got, want)
		}
	}
	if got := tg.Owner("KUBE-NODE-PORT-LOCAL-TCP 30081"); got != "default/lb:http" {
		t.Errorf("owner of a NodePort member: %q", got)
	}
	text := tg.Rules.Text()
	for _, want := range []string{
		"-A KUBE-IPVS-OUT-FILTER -s 198.51.100.5/32 -m ipvs --vproto 6 --vaddr 198.51.100.5 --vport 80 -j DROP",
		"-A KUBE-LOAD-BALANCER -m comment --comment \"Kubernetes service load balancer ip + port with externalTrafficPolicy=local\" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN",
		"-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ",
		"-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
		"-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the rules lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ") {
		t.Errorf("rules for an empty set:\n%s", text)
	}
}

// With a Service, a plan compares only that Service's objects.
func TestDiffScope(t *testing.T) {
	tg := Render(testView(), RenderSettings{Family: "IPv4", NodePortIPs: addrs("192.0.2.10")})
	d := diff(&State{Sets: &IPSets{Sets: map[string]*IPSet{}}}, tg, "default/web")
	var got []string
	for _, c := range d.changes(tg) {
		got = append(got, c.Op+" "+c.Table+" "+c.Object)
		for _, x := range c.Add {
			if strings.Contains(x, "10.96.0.11") || strings.Contains(x, "198.51.100.5") {
				t.Errorf("%s %s adds another Service's %q", c.Table, c.Object, x)
			}
		}
	}
	for _, want := range []string{"create ipvs TCP 10.96.0.10:80", "create ipvs TCP 192.0.2.10:30080", "create ipset KUBE-CLUSTER-IP", "edit kube-ipvs0 addresses"} {
		if !slices.Contains(got, want) {
			t.Errorf("scoped plan lacks %q: %q", want, got)
		}
	}
	for _, c := range got {
		if strings.Contains(c, "nat") || strings.Contains(c, "filter") || strings.Contains(c, "KUBE-LOAD-BALANCER") {
			t.Errorf("scoped plan has %q", c)
		}
	}
}

// An external IP that is one of the node's addresses is not bound on
// kube-ipvs0, even where --nodeport-addresses leaves it out of the
// NodePorts' addresses.
func TestRenderExternalNodeAddress(t *testing.T) {
	v := testView()
	v.Ports[0].ExternalIPs = []string{"192.0.2.20", "198.51.100.9"}
	tg := Render(v, RenderSettings{Family: "IPv4", NodePortIPs: addrs("192.0.2.10"), NodeAddrs: addrs("192.0.2.10", "192.0.2.20")})
	var bound []string
	for _, a := range tg.Addrs {
		bound = append(bound, a.Addr().String())
	}
	if slices.Contains(bound, "192.0.2.20") || !slices.Contains(bound, "198.51.100.9") {
		t.Errorf("kube-ipvs0: %q", bound)
	}
	var keys []string
	for _, v := range tg.Virtuals {
		keys = append(keys, v.Key())
	}
	if !slices.Contains(keys, "TCP 192.0.2.20:80") || slices.Contains(keys, "TCP 192.0.2.20:30080") {
		t.Errorf("virtual servers: %q", keys)
	}
}
