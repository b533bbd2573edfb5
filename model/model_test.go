package model

import (
	"os"
	"reflect"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// loadFixture decodes the two-nodes capture of kube-proxy v1.36.3.
func loadFixture(t *testing.T) *snapshot.Cluster {
	t.Helper()
	data, err := os.ReadFile("testdata/two-nodes-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, notes, err := DecodeObjects(data)
	if err != nil {
		t.Fatalf("DecodeObjects: %v", err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %q, want none", notes)
	}
	return c
}

func buildView(t *testing.T, c *snapshot.Cluster, node, family string) *NodeView {
	t.Helper()
	v, err := BuildNodeView(c, node, family)
	if err != nil {
		t.Fatalf("BuildNodeView(%s, %s): %v", node, family, err)
	}
	return v
}

func mustPort(t *testing.T, v *NodeView, spn, proto string) *ServicePort {
	t.Helper()
	p, ok := v.FindPort(spn, proto)
	if !ok {
		t.Fatalf("%s: no port %s/%s", v.Node, spn, proto)
	}
	return p
}

func epStrings(eps []Endpoint) []string {
	out := []string{}
	for _, ep := range eps {
		out = append(out, ep.String())
	}
	return out
}

func checkEps(t *testing.T, what string, got []Endpoint, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if g := epStrings(got); !reflect.DeepEqual(g, want) {
		t.Errorf("%s = %q, want %q", what, g, want)
	}
}

func TestFixtureDecode(t *testing.T) {
	c := loadFixture(t)
	if len(c.Nodes) != 2 || len(c.Services) != 7 || len(c.EndpointSlices) != 3 || len(c.Pods) != 0 {
		t.Errorf("decoded %d nodes, %d services, %d slices, %d pods; want 2, 7, 3, 0",
			len(c.Nodes), len(c.Services), len(c.EndpointSlices), len(c.Pods))
	}
	if c.PodsListed {
		t.Error("PodsListed = true for a capture without pods")
	}
}

func TestFixtureNode1(t *testing.T) {
	v := buildView(t, loadFixture(t), "node1", "IPv4")
	if !reflect.DeepEqual(v.NodeIPs, []string{"192.0.2.10"}) || v.Zone != "" {
		t.Errorf("NodeIPs = %q, Zone = %q", v.NodeIPs, v.Zone)
	}

	nginx := mustPort(t, v, "default/nginx:http", "TCP")
	checkEps(t, "nginx endpoints", nginx.Endpoints, "10.244.0.5:8080", "10.244.0.6:8080", "10.244.1.7:8080")
	checkEps(t, "nginx cluster", nginx.ClusterEndpoints, "10.244.0.5:8080", "10.244.0.6:8080", "10.244.1.7:8080")
	if nginx.LocalEndpoints != nil || !nginx.HasAnyEndpoints || nginx.ClusterIP != "10.96.94.233" {
		t.Errorf("nginx: local %v, hasAny %v, clusterIP %q", nginx.LocalEndpoints, nginx.HasAnyEndpoints, nginx.ClusterIP)
	}
	if nginx.SPN() != "default/nginx:http" || nginx.ProtoLower() != "tcp" || nginx.ExternallyAccessible {
		t.Errorf("nginx: SPN %q proto %q ext %v", nginx.SPN(), nginx.ProtoLower(), nginx.ExternallyAccessible)
	}

	cart := mustPort(t, v, "shop/cart:http", "TCP")
	if !cart.ExternalPolicyLocal || cart.InternalPolicyLocal || !cart.ExternallyAccessible {
		t.Errorf("cart policies: etpLocal %v itpLocal %v ext %v", cart.ExternalPolicyLocal, cart.InternalPolicyLocal, cart.ExternallyAccessible)
	}
	if cart.AffinityTimeoutSeconds != 10800 || cart.HealthCheckNodePort != 30237 || cart.NodePort != 32296 {
		t.Errorf("cart: affinity %d hc %d nodePort %d", cart.AffinityTimeoutSeconds, cart.HealthCheckNodePort, cart.NodePort)
	}
	if !reflect.DeepEqual(cart.LoadBalancerIPs, []string{"198.51.100.50"}) ||
		!reflect.DeepEqual(cart.LoadBalancerSourceRanges, []string{"203.0.113.0/24"}) {
		t.Errorf("cart: LB IPs %q source ranges %q", cart.LoadBalancerIPs, cart.LoadBalancerSourceRanges)
	}
	if cart.TargetPort.StrVal != "web" {
		t.Errorf("cart targetPort = %v", cart.TargetPort)
	}
	checkEps(t, "cart endpoints", cart.Endpoints, "10.244.0.20:8080", "10.244.0.22:8080", "10.244.1.21:8080")
	checkEps(t, "cart cluster", cart.ClusterEndpoints, "10.244.0.20:8080", "10.244.1.21:8080")
	checkEps(t, "cart local node1", cart.LocalEndpoints, "10.244.0.20:8080")

	metrics := mustPort(t, v, "shop/cart:metrics", "TCP")
	checkEps(t, "cart metrics endpoints", metrics.Endpoints, "10.244.0.20:9090", "10.244.0.22:9090", "10.244.1.21:9090")

	for _, proto := range []string{"UDP", "TCP"} {
		spn := "shop/dns:dns"
		if proto == "TCP" {
			spn = "shop/dns:dns-tcp"
		}
		dns := mustPort(t, v, spn, proto)
		if !dns.InternalPolicyLocal || dns.ExternalPolicyLocal || !dns.ExternallyAccessible {
			t.Errorf("%s: itpLocal %v etpLocal %v ext %v", spn, dns.InternalPolicyLocal, dns.ExternalPolicyLocal, dns.ExternallyAccessible)
		}
		if !reflect.DeepEqual(dns.ExternalIPs, []string{"198.51.100.7"}) {
			t.Errorf("%s externalIPs = %q", spn, dns.ExternalIPs)
		}
		checkEps(t, spn+" local", dns.LocalEndpoints, "10.244.0.30:5353")
		// Externally accessible: cluster endpoints are still used.
		checkEps(t, spn+" cluster", dns.ClusterEndpoints, "10.244.0.30:5353", "10.244.1.31:5353")
	}
	if _, ok := v.FindPort("shop/dns:dns", "TCP"); ok {
		t.Error("FindPort matched shop/dns:dns with the wrong protocol")
	}

	for _, spn := range []string{"default/web-np:http", "default/kubernetes:https"} {
		p := mustPort(t, v, spn, "tcp")
		if len(p.Endpoints) != 0 || p.HasAnyEndpoints || p.ClusterEndpoints != nil {
			t.Errorf("%s: endpoints %v hasAny %v", spn, p.Endpoints, p.HasAnyEndpoints)
		}
	}
	webnp := mustPort(t, v, "default/web-np:http", "TCP")
	if !webnp.ExternalPolicyLocal || webnp.HealthCheckNodePort != 0 {
		t.Errorf("web-np: etpLocal %v hc %d", webnp.ExternalPolicyLocal, webnp.HealthCheckNodePort)
	}

	wantSkipped := []Skipped{
		{Service: "shop/ext", Reason: "ExternalName: DNS CNAME to example.com; no node rules"},
		{Service: "shop/headless", Reason: "headless: DNS returns endpoint addresses; no node rules"},
	}
	if !reflect.DeepEqual(v.Skipped, wantSkipped) {
		t.Errorf("Skipped = %+v", v.Skipped)
	}

	var order []string
	for _, p := range v.Ports {
		order = append(order, p.SPN()+"/"+p.Protocol)
	}
	wantOrder := []string{
		"default/kubernetes:https/TCP", "default/nginx:http/TCP", "default/web-np:http/TCP",
		"shop/cart:http/TCP", "shop/cart:metrics/TCP", "shop/dns:dns/UDP", "shop/dns:dns-tcp/TCP",
	}
	if !reflect.DeepEqual(order, wantOrder) {
		t.Errorf("port order = %q", order)
	}
	if got := v.Find("shop", "cart"); len(got) != 2 {
		t.Errorf("Find(shop, cart) = %d ports", len(got))
	}
}

func TestFixtureNode2(t *testing.T) {
	v := buildView(t, loadFixture(t), "node2", "IPv4")
	if !reflect.DeepEqual(v.NodeIPs, []string{"192.0.2.11"}) {
		t.Errorf("NodeIPs = %q", v.NodeIPs)
	}
	checkEps(t, "cart local node2", mustPort(t, v, "shop/cart:http", "TCP").LocalEndpoints, "10.244.1.21:8080")
	checkEps(t, "dns local node2", mustPort(t, v, "shop/dns:dns", "UDP").LocalEndpoints, "10.244.1.31:5353")
}

func TestFixtureIPv6ViewIsEmpty(t *testing.T) {
	v := buildView(t, loadFixture(t), "node1", "IPv6")
	if len(v.Ports) != 0 || len(v.NodeIPs) != 0 {
		t.Errorf("IPv6 view: %d ports, node IPs %q", len(v.Ports), v.NodeIPs)
	}
	if len(v.Skipped) != 7 {
		t.Errorf("IPv6 view skipped %d services, want 7: %+v", len(v.Skipped), v.Skipped)
	}
}

func TestBuildNodeViewErrorsAndMissingNode(t *testing.T) {
	c := loadFixture(t)
	if _, err := BuildNodeView(c, "node1", "ipv4"); err == nil {
		t.Error("family ipv4 accepted")
	}
	if _, err := BuildNodeView(nil, "node1", "IPv4"); err == nil {
		t.Error("nil cluster accepted")
	}
	v := buildView(t, c, "node9", "IPv4")
	if len(v.NodeIPs) != 0 || v.Zone != "" || len(v.Ports) != 7 {
		t.Errorf("unknown node: ips %q zone %q ports %d", v.NodeIPs, v.Zone, len(v.Ports))
	}
	checkEps(t, "cart local node9", mustPort(t, v, "shop/cart:http", "TCP").LocalEndpoints)
}

func TestSPNUnnamed(t *testing.T) {
	p := ServicePort{Namespace: "default", Name: "nginx", Protocol: "SCTP"}
	if p.SPN() != "default/nginx" || p.ProtoLower() != "sctp" {
		t.Errorf("SPN %q proto %q", p.SPN(), p.ProtoLower())
	}
	e := Endpoint{IP: "fd00::5", Port: 8080}
	if e.String() != "[fd00::5]:8080" {
		t.Errorf("endpoint string %q", e.String())
	}
}
