package nftables

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

// node2Frontends is what both captures hold (objects.yaml): no NodePorts,
// since nodeport-ips is empty on node2.
func node2Frontends() []string {
	return []string{
		"ClusterIP 10.96.0.1:443/TCP default/kubernetes:https",
		"ClusterIP 10.96.40.90:80/TCP shop/cart:http",
		"ClusterIP 10.96.40.90:9090/TCP shop/cart:metrics",
		"ClusterIP 10.96.64.120:53/TCP shop/dns:dns-tcp",
		"ClusterIP 10.96.64.120:53/UDP shop/dns:dns",
		"ClusterIP 10.96.84.163:8081/TCP default/web-np:http",
		"ClusterIP 10.96.94.233:80/TCP default/nginx:http",
		"ExternalIP 198.51.100.7:53/TCP shop/dns:dns-tcp",
		"ExternalIP 198.51.100.7:53/UDP shop/dns:dns",
		"LoadBalancer 198.51.100.50:80/TCP shop/cart:http",
		"LoadBalancer 198.51.100.50:9090/TCP shop/cart:metrics",
	}
}

func frontendLines(p *Plane) []string {
	var out []string
	for _, f := range p.Frontends() {
		out = append(out, f.Key.String()+" "+f.Service)
	}
	return out
}

func TestFrontendsCaptures(t *testing.T) {
	for _, path := range captures() {
		p := NewPlane(mustParse(t, path, readCapture(t, path)), "IPv4")
		got := frontendLines(p)
		if strings.Join(got, "\n") != strings.Join(node2Frontends(), "\n") {
			t.Errorf("%s: frontends\n%s\nwant\n%s", version(path), strings.Join(got, "\n"), strings.Join(node2Frontends(), "\n"))
		}
		if f := p.Frontends(); len(f) > 0 && f[0].Outcomes != nil {
			t.Errorf("%s: outcomes filled", version(path))
		}
		var emptyNote bool
		for _, n := range p.Notes() {
			emptyNote = emptyNote || strings.Contains(n, "service-nodeports holds 2 NodePorts")
		}
		if !emptyNote {
			t.Errorf("%s: notes %v do not say that no address accepts the NodePorts", version(path), p.Notes())
		}
		if f := NewPlane(p.rs, "IPv6").Frontends(); len(f) != 0 {
			t.Errorf("%s: IPv6 frontends %v", version(path), f)
		}
	}
}

// withNodePortIP adds the node's address to nodeport-ips, as kube-proxy
// writes it when the address is on an interface of the node.
func withNodePortIP(t *testing.T, path string) []byte {
	return edit(t, readCapture(t, path), func(items []any) []any {
		for _, it := range items {
			if s, ok := object(it, "set", "nodeport-ips"); ok {
				s["elem"] = []any{"192.0.2.11"}
			}
		}
		return items
	})
}

func TestNodePorts(t *testing.T) {
	for _, path := range captures() {
		p := NewPlane(mustParse(t, "edited", withNodePortIP(t, path)), "IPv4")
		got := strings.Join(frontendLines(p), "\n")
		for _, want := range []string{
			"NodePort 192.0.2.11:30080/TCP default/web-np:http",
			"NodePort 192.0.2.11:32041/TCP shop/cart:metrics",
			"NodePort 192.0.2.11:32296/TCP shop/cart:http",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: frontends lack %s:\n%s", version(path), want, got)
			}
		}
		w := p.Walker(node2Env())
		checkWalk(t, w.Walk(pkt("203.0.113.9", "192.0.2.11", "tcp", 30080)), walkCase{
			verdict: dataplane.Reject, reason: "default/web-np:http has no endpoints"})
		checkWalk(t, w.Walk(pkt("203.0.113.9", "192.0.2.11", "tcp", 32296)), walkCase{
			verdict: dataplane.Accept, backends: map[string]float64{"10.244.1.21:8080": 1}, affinity: 10800, affKey: affCartHTTP21})
	}
}

// TestNodePortsAnyAddress: with "fib daddr type local" (nodePortAddresses
// unset) a NodePort is open on every local address: IP "".
func TestNodePortsAnyAddress(t *testing.T) {
	data := edit(t, readCapture(t, captures()[0]), func(items []any) []any {
		for _, it := range items {
			if m, ok := it.(map[string]any)["map"].(map[string]any); ok && m["family"] == "ip6" && m["name"] == "service-nodeports" {
				m["elem"] = []any{[]any{map[string]any{"concat": []any{"tcp", json.Number("31000")}},
					map[string]any{"goto": map[string]any{"target": "external-AAAAAAAA-ns/svc/tcp/p"}}}}
			}
		}
		return items
	})
	p := NewPlane(mustParse(t, "edited", data), "IPv6")
	if got := strings.Join(frontendLines(p), "\n"); got != "NodePort 31000/TCP ns/svc:p" {
		t.Errorf("IPv6 frontends %q", got)
	}
}

// TestUniqueFrontends: one frontend per key, in key order; a key named
// again keeps the first Service named for it.
func TestUniqueFrontends(t *testing.T) {
	key := func(ip string, port int32) behavior.Key {
		return behavior.Key{Kind: behavior.ClusterIP, IP: ip, Port: port, Protocol: "TCP"}
	}
	var found []foundFrontend
	for _, f := range []struct {
		k   behavior.Key
		svc string
	}{
		{key("10.96.0.2", 80), ""},
		{key("10.96.0.1", 443), "default/kubernetes:https"},
		{key("10.96.0.2", 80), "shop/cart:http"},
		{key("10.96.0.1", 443), "other/name:https"},
		{key("10.96.0.2", 80), "shop/web:http"},
		{key("10.96.0.1", 80), ""},
	} {
		found = append(found, foundFrontend{key: f.k, service: f.svc, seq: len(found)})
	}
	want := []behavior.Frontend{
		{Key: key("10.96.0.1", 80)},
		{Key: key("10.96.0.1", 443), Service: "default/kubernetes:https"},
		{Key: key("10.96.0.2", 80), Service: "shop/cart:http"},
	}
	if got := uniqueFrontends(found); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
