package snapshottest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// labNode1 is node1's nft -j list ruleset from the lab's kube-proxy
// v1.36.3 in nftables mode.
func labNode1(t testing.TB) []map[string]any {
	t.Helper()
	s, err := snapshot.Load("../../examples/lab-nftables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns, ok := s.Node("node1")
	if !ok {
		t.Fatal("no node1 in the lab snapshot")
	}
	for _, d := range ns.Dumps {
		if d.Collector == "nft-json" {
			return decodeNFT(t, d.Text)
		}
	}
	t.Fatal("no nft-json dump on the lab's node1")
	return nil
}

// decodeNFT returns the objects of an nft -j document, each as
// {"kind": {...}}.
func decodeNFT(t testing.TB, text string) []map[string]any {
	t.Helper()
	var doc struct{ Nftables []map[string]any }
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return doc.Nftables
}

var perService = regexp.MustCompile(`^(service|local|external|firewall|endpoint|affinity)-[A-Z2-7]{8}-`)

// body is an object's kind and fields; name is what it is called (a
// rule: its chain).
func body(o map[string]any) (kind string, m map[string]any, name string) {
	for k, v := range o {
		m, _ = v.(map[string]any)
		kind = k
	}
	name, _ = m["name"].(string)
	if kind == "rule" {
		name, _ = m["chain"].(string)
	}
	return kind, m, name
}

// fixedPart is what kube-proxy writes whatever the Services: the objects
// that belong to no Service, without the elements of the sets and maps
// the Services fill.
func fixedPart(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		kind, m, name := body(o)
		if perService.MatchString(name) {
			continue
		}
		if (kind == "set" || kind == "map") && name != "nodeport-ips" {
			delete(m, "elem")
		}
		b, _ := json.Marshal(o)
		out = append(out, string(b))
	}
	return out
}

// TestNFTablesJSONFixedPartIsTheCapture: around the Services, the
// generator writes exactly the lab's node1 (the same objects, fields,
// order and handles).
func TestNFTablesJSONFixedPartIsTheCapture(t *testing.T) {
	want := fixedPart(labNode1(t))
	got := fixedPart(decodeNFT(t, NFTablesJSON(3, 2)))
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("object %d of the fixed part:\n got %s\nwant %s", i, g, w)
		}
	}
}

// normalise replaces what differs between two Services (the chain's
// name, handles, addresses) by placeholders.
func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if s, ok := x.(string); ok && perService.MatchString(s) {
				out[k] = "CHAIN"
			} else if k == "handle" {
				out[k] = "H"
			} else {
				out[k] = normalise(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalise(x)
		}
		return out
	case string:
		return regexp.MustCompile(`^10\.(96|244)\.\d+\.\d+$`).ReplaceAllString(v, "ADDR-$1")
	}
	return v
}

// serviceObjects are the service-ips element, the service chain and its
// rules of the Service whose chain has the prefix chain, normalised.
func serviceObjects(t *testing.T, objs []map[string]any, chain string) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		kind, m, name := body(o)
		if kind == "map" && name == "service-ips" {
			els, _ := m["elem"].([]any)
			for _, el := range els {
				if strings.Contains(fmt.Sprint(el), chain) {
					b, _ := json.Marshal(normalise(el))
					out = append(out, "element "+string(b))
				}
			}
		}
		if strings.HasPrefix(name, chain) {
			b, _ := json.Marshal(normalise(o))
			out = append(out, string(b))
		}
	}
	return out
}

// TestNFTablesJSONServiceIsTheCapture: a Service's objects have the shape
// of the lab's default/web (a ClusterIP, TCP port 80 to 8080, three
// endpoints, no affinity) on node1.
func TestNFTablesJSONServiceIsTheCapture(t *testing.T) {
	want := serviceObjects(t, labNode1(t), "service-SUSTUHLJ-default/web/tcp/http")
	got := serviceObjects(t, decodeNFT(t, NFTablesJSON(2, 3)), ServiceChainNFT(1))
	if len(want) != 3 {
		t.Fatalf("the capture's default/web has %d objects, want the element, the chain and its rule: %q", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Service 1:\n got %q\nwant %q", got, want)
	}
}

func TestNFTHashIsKubeProxys(t *testing.T) {
	// Names from the capture in testdata/kube-proxy-v1.36.3/two-nodes.
	for base, want := range map[string]string{
		"default/nginx/tcp/http":               "2ETI3MDI-default/nginx/tcp/http",
		"shop/cart/tcp/http__10.244.0.20/8080": "GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080",
	} {
		if got := nftHashed(base); got != want {
			t.Errorf("nftHashed(%q) = %q, want %q", base, got, want)
		}
	}
}

// TestNFTablesJSONContent checks what varies with the sizes: every
// ClusterIP, one chain per Service with its endpoints in kube-proxy's
// order, and no-endpoint elements when there are no endpoints; and that
// the output is the same every time.
func TestNFTablesJSONContent(t *testing.T) {
	text := NFTablesJSON(12, 11)
	if text != NFTablesJSON(12, 11) {
		t.Fatal("two runs differ")
	}
	var clusterIPs, serviceIPs, chains int
	for _, o := range decodeNFT(t, text) {
		kind, m, name := body(o)
		switch {
		case kind == "set" && name == "cluster-ips" && m["family"] == "ip":
			clusterIPs = len(m["elem"].([]any))
		case kind == "map" && name == "service-ips" && m["family"] == "ip":
			serviceIPs = len(m["elem"].([]any))
		case kind == "chain" && perService.MatchString(name):
			chains++
		}
	}
	if clusterIPs != 12 || serviceIPs != 12 || chains != 12 {
		t.Errorf("%d cluster-ips, %d service-ips elements, %d chains; want 12 each", clusterIPs, serviceIPs, chains)
	}
	// Service 11's endpoints are 10.244.0.121 to .131: as strings,
	// "10.244.0.130:8080" sorts before "10.244.0.13x" and after ".12x".
	i := strings.Index(text, `"chain": "`+ServiceChainNFT(11)+`", "handle"`)
	if i < 0 {
		t.Fatal("no rule in the chain of Service 11")
	}
	wantOrder := `[0, {"concat": ["10.244.0.121", 8080]}]`
	if j := strings.Index(text[i:], "[9, "); j < 0 || !strings.HasPrefix(text[i+j:], `[9, {"concat": ["10.244.0.130", 8080]}], [10, {"concat": ["10.244.0.131", 8080]}]]`) ||
		!strings.Contains(text[i:], wantOrder) {
		t.Errorf("Service 11's endpoints not in kube-proxy's order: %.600s", text[i:])
	}

	none := NFTablesJSON(2, 0)
	if strings.Contains(none, ServiceChainNFT(1)) || !strings.Contains(none,
		`[{"elem": {"val": {"concat": ["10.96.0.11", "tcp", 80]}, "comment": "ns-1/svc-1:http"}}, {"goto": {"target": "reject-chain"}}]`) {
		t.Errorf("Services without endpoints: want no-endpoint-services elements and no chains, got %.1500s", none)
	}
	if !json.Valid([]byte(none)) || !json.Valid([]byte(NFTablesJSON(0, 0))) {
		t.Error("not valid JSON without Services or endpoints")
	}
}

func TestNodeNFTables(t *testing.T) {
	s := NodeNFTables(4, 2)
	n := s.Nodes[0]
	if n.KubeProxy.Mode != "nftables" || len(n.Dumps) != 1 || n.Dumps[0].Collector != "nft-json" {
		t.Fatalf("node1: mode %q, dumps %+v", n.KubeProxy.Mode, n.Dumps)
	}
	if !bytes.Equal([]byte(n.Dumps[0].Text), []byte(NFTablesJSON(4, 2))) {
		t.Error("the dump is not NFTablesJSON(4, 2)")
	}
	if len(s.Cluster.Services) != 4 || len(s.Cluster.EndpointSlices[3].Endpoints) != 2 {
		t.Error("the API objects are not Node's")
	}
}

func BenchmarkNFTablesJSON10k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.SetBytes(int64(len(NFTablesJSON(10000, 10))))
	}
}
