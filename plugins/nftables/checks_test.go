package nftables

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/dataplane"
)

func TestChecksCaptures(t *testing.T) {
	for _, path := range captures() {
		rs := mustParse(t, path, readCapture(t, path))
		for _, fam := range []string{"IPv4", "IPv6"} {
			for _, mode := range []string{"", "nftables"} {
				if f := NewPlane(rs, fam).Checks("node2", mode); len(f) != 0 {
					t.Errorf("%s %s mode %q: findings %+v", version(path), fam, mode, f)
				}
			}
		}
		f := NewPlane(rs, "IPv4").Checks("node2", "iptables")
		if len(f) != 1 || f[0].Type != behavior.LeftoverRules || !strings.Contains(f[0].Observed, "ip kube-proxy") {
			t.Errorf("%s: in iptables mode the table is a leftover: %+v", version(path), f)
		}
	}
}

// TestDeletedServiceElement: without its service-ips element the nginx
// ClusterIP is no longer DNATed; the node's cluster-ips-check then
// rejects it (the address is still an active ClusterIP).
func TestDeletedServiceElement(t *testing.T) {
	for _, path := range captures() {
		data := edit(t, readCapture(t, path), func(items []any) []any {
			for _, it := range items {
				if m, ok := object(it, "map", "service-ips"); ok {
					var keep []any
					for _, el := range m["elem"].([]any) {
						if !strings.Contains(compact(el), "10.96.94.233") {
							keep = append(keep, el)
						}
					}
					m["elem"] = keep
				}
			}
			return items
		})
		p := NewPlane(mustParse(t, "edited", data), "IPv4")
		checkWalk(t, p.Walker(node2Env()).Walk(pkt("10.244.1.99", "10.96.94.233", "tcp", 80)), walkCase{
			verdict: dataplane.Reject, reason: "Reject traffic to invalid ports of ClusterIPs"})
		if got := strings.Join(frontendLines(p), "\n"); strings.Contains(got, "10.96.94.233") {
			t.Errorf("%s: frontends still list nginx:\n%s", version(path), got)
		}
		// Nothing goes to the service chain any more: it is an orphan
		// (1.33's endpoint chains are still referenced by it).
		f := p.Checks("node2", "")
		if len(f) != 1 || f[0].Type != behavior.OrphanChain || f[0].Service != "default/nginx:http" ||
			!strings.Contains(f[0].Observed, "service-2ETI3MDI-default/nginx/tcp/http") {
			t.Errorf("%s: findings %+v", version(path), f)
		}
		// The service chain picks among endpoints (1.36's numgen map, or
		// 1.33's jumps to endpoint chains): it has no one endpoint.
		if len(f) == 1 && f[0].Endpoint != "" {
			t.Errorf("%s: the orphaned service chain names endpoint %q", version(path), f[0].Endpoint)
		}
	}
}

func TestOrphans(t *testing.T) {
	const chain = "endpoint-ZZZZ2222-default/old/tcp/http__10.244.9.9/80"
	const set = "affinity-ZZZZ2222-default/old/tcp/http__10.244.9.9/80"
	for _, path := range captures() {
		data := edit(t, readCapture(t, path), func(items []any) []any {
			return append(items,
				map[string]any{"chain": map[string]any{"family": "ip", "table": "kube-proxy", "name": chain, "handle": json.Number("999")}},
				map[string]any{"rule": map[string]any{"family": "ip", "table": "kube-proxy", "chain": chain, "handle": json.Number("1000"),
					"expr": []any{map[string]any{"dnat": map[string]any{"addr": "10.244.9.9", "port": json.Number("80")}}}}},
				map[string]any{"set": map[string]any{"family": "ip", "table": "kube-proxy", "name": set, "type": "ipv4_addr",
					"flags": []any{"timeout"}, "timeout": json.Number("10800")}})
		})
		f := NewPlane(mustParse(t, "edited", data), "IPv4").Checks("node2", "nftables")
		if len(f) != 2 {
			t.Fatalf("%s: findings %+v", version(path), f)
		}
		if f[0].Type != behavior.OrphanChain || f[0].Service != "default/old:http" || f[0].Node != "node2" ||
			!strings.Contains(f[0].Observed, chain) || len(f[0].Rules) != 1 || f[0].Rules[0] != "dnat to 10.244.9.9:80" || f[0].Endpoint != "10.244.9.9:80" {
			t.Errorf("%s: chain finding %+v", version(path), f[0])
		}
		if f[1].Type != behavior.OrphanChain || !strings.Contains(f[1].Observed, "affinity set "+set) {
			t.Errorf("%s: set finding %+v", version(path), f[1])
		}
	}
}

// TestLeftoverIptablesNFT: KUBE-* chains that iptables-nft wrote in the
// "ip nat" table next to kube-proxy's table are another mode's leftovers,
// and the walk goes through them too.
func TestLeftoverIptablesNFT(t *testing.T) {
	data := edit(t, readCapture(t, captures()[0]), func(items []any) []any {
		rule := func(chain string, expr ...any) any {
			return map[string]any{"rule": map[string]any{"family": "ip", "table": "nat", "chain": chain, "expr": expr}}
		}
		return append(items,
			map[string]any{"table": map[string]any{"family": "ip", "name": "nat"}},
			map[string]any{"chain": map[string]any{"family": "ip", "table": "nat", "name": "PREROUTING",
				"type": "nat", "hook": "prerouting", "prio": json.Number("-105"), "policy": "accept"}},
			map[string]any{"chain": map[string]any{"family": "ip", "table": "nat", "name": "KUBE-SERVICES"}},
			map[string]any{"chain": map[string]any{"family": "ip", "table": "nat", "name": "KUBE-KUBELET-CANARY"}},
			rule("PREROUTING", map[string]any{"xt": map[string]any{"type": "match", "name": "comment"}},
				map[string]any{"jump": map[string]any{"target": "KUBE-SERVICES"}}),
			rule("KUBE-SERVICES",
				map[string]any{"match": map[string]any{"op": "==", "left": map[string]any{"payload": map[string]any{"protocol": "ip", "field": "daddr"}}, "right": "10.96.94.233"}},
				map[string]any{"match": map[string]any{"op": "==", "left": map[string]any{"payload": map[string]any{"protocol": "tcp", "field": "dport"}}, "right": json.Number("80")}},
				map[string]any{"dnat": map[string]any{"addr": "10.244.9.9", "port": json.Number("8080")}}))
	})
	p := NewPlane(mustParse(t, "edited", data), "IPv4")
	f := p.Checks("node2", "")
	if len(f) != 1 || f[0].Type != behavior.LeftoverRules || !strings.Contains(f[0].Observed, "table ip nat") ||
		!strings.Contains(f[0].Observed, "KUBE-SERVICES") || strings.Contains(f[0].Observed, "CANARY") {
		t.Fatalf("findings %+v", f)
	}
	// The leftover nat chain runs first (priority -105) and its DNAT wins:
	// kube-proxy's nat chain no longer runs for the connection.
	checkWalk(t, p.Walker(node2Env()).Walk(pkt("10.244.1.99", "10.96.94.233", "tcp", 80)), walkCase{
		verdict: dataplane.Accept, backends: map[string]float64{"10.244.9.9:8080": 1}, via: "KUBE-SERVICES"})
}

func TestInfer(t *testing.T) {
	for _, path := range captures() {
		p := NewPlane(mustParse(t, path, readCapture(t, path)), "IPv4")
		in := p.Infer()
		if in.Mode != "nftables" || strings.Join(in.ClusterCIDRs, ",") != "10.244.0.0/16" || in.MasqueradeBit != 14 {
			t.Errorf("%s: inferred %+v", version(path), in)
		}
		if len(in.Evidence) != 4 {
			t.Errorf("%s: evidence %v", version(path), in.Evidence)
		}
		// The capture's nodeport-ips set is empty: NodePorts open nowhere.
		if !in.NodePortIPsKnown || len(in.NodePortIPs) != 0 {
			t.Errorf("%s: NodePort addresses %v (known %v), want a known empty list", version(path), in.NodePortIPs, in.NodePortIPsKnown)
		}
		if in6 := NewPlane(p.rs, "IPv6").Infer(); in6.Mode != "nftables" || len(in6.ClusterCIDRs) != 0 || in6.MasqueradeBit != 14 {
			t.Errorf("%s: IPv6 inferred %+v", version(path), in6)
		}
	}
	if in := NewPlane(&Ruleset{}, "IPv4").Infer(); in.Mode != "" || NewPlane(nil, "IPv4").HasKubeProxy() {
		t.Errorf("empty ruleset: %+v", in)
	}
}
