package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestDecodeMultiDocumentStream(t *testing.T) {
	in := `# leading comment
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.0.5
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: default}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  containers: [{name: c, image: x, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm2, namespace: default}
---
apiVersion: discovery.k8s.io/v1beta1
kind: EndpointSlice
metadata: {name: old, namespace: default}
addressType: IPv4
endpoints: []
`
	c, notes, err := DecodeObjects([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != 1 || len(c.Pods) != 1 || !c.PodsListed || len(c.EndpointSlices) != 0 {
		t.Errorf("services %d pods %d listed %v slices %d", len(c.Services), len(c.Pods), c.PodsListed, len(c.EndpointSlices))
	}
	if tp := c.Services[0].Spec.Ports[0].TargetPort; tp.StrVal != "http" {
		t.Errorf("targetPort = %v", tp)
	}
	if c.Pods[0].CreationTimestamp.Year() != 2026 {
		t.Errorf("pod creationTimestamp = %v", c.Pods[0].CreationTimestamp)
	}
	want := []string{
		"ignored 2 ConfigMap object(s)",
		"ignored 1 EndpointSlice of apiVersion discovery.k8s.io/v1beta1 object(s)",
	}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("notes = %q", notes)
	}
}

func TestDecodeTypedListAndJSON(t *testing.T) {
	in := `{"apiVersion": "v1", "kind": "PodList", "items": []}`
	c, _, err := DecodeObjects([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !c.PodsListed {
		t.Error("an empty PodList must set PodsListed")
	}

	in = `kind: NodeList
apiVersion: v1
items:
- metadata: {name: n1}
  status: {addresses: [{type: InternalIP, address: 192.0.2.1}]}
`
	c, _, err = DecodeObjects([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Name != "n1" || c.PodsListed {
		t.Errorf("nodes %+v listed %v", c.Nodes, c.PodsListed)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{
			name: "malformed object in a list",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
- apiVersion: v1
  kind: Service
  metadata: {name: bad, namespace: shop}
  spec: {ports: "80"}
`,
			want: []string{"document 1 item 1", "Service shop/bad"},
		},
		{
			name: "malformed second document",
			in:   "kind: Node\napiVersion: v1\nmetadata: {name: a}\n---\nkind: EndpointSlice\napiVersion: discovery.k8s.io/v1\nmetadata: {name: s}\nendpoints: 5\n",
			want: []string{"document 2", "EndpointSlice s"},
		},
		{
			name: "Endpoints address not an IP",
			in: `apiVersion: v1
kind: EndpointsList
items:
- metadata: {name: web, namespace: shop}
  subsets:
  - addresses: [{ip: 10.0.0.1}]
    notReadyAddresses: [{ip: 10.0.0.2}, {ip: web-1.local}]
    ports: [{port: 8080}]
`,
			want: []string{"document 1 item 0", "Endpoints shop/web", `subsets[0].notReadyAddresses[1].ip "web-1.local" is not an IP address`},
		},
		{
			name: "no kind",
			in:   "metadata: {name: a}\n",
			want: []string{"document 1", "no kind"},
		},
		{
			name: "not an object",
			in:   "- a\n- b\n",
			want: []string{"document 1", "not a Kubernetes object"},
		},
		{
			name: "bad YAML",
			in:   "kind: Node\n---\nkind: [\n",
			want: []string{"document 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := DecodeObjects([]byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDecodeEndpoints(t *testing.T) {
	in := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Endpoints
  metadata:
    name: web
    namespace: shop
    annotations: {endpoints.kubernetes.io/over-capacity: truncated}
  subsets:
  - addresses: [{ip: 10.0.0.1, nodeName: node1}]
    notReadyAddresses: [{ip: "fd00::2"}]
    ports: [{name: http, port: 8080, protocol: TCP}]
`
	c, notes, err := DecodeObjects([]byte(in))
	if err != nil || len(notes) != 0 {
		t.Fatalf("err %v, notes %q", err, notes)
	}
	if len(c.Endpoints) != 1 || !c.EndpointsListed {
		t.Fatalf("endpoints %d, listed %v", len(c.Endpoints), c.EndpointsListed)
	}
	e := c.Endpoints[0]
	if e.Namespace != "shop" || !truncated(&e) || len(e.Subsets) != 1 ||
		*e.Subsets[0].Addresses[0].NodeName != "node1" || e.Subsets[0].NotReadyAddresses[0].IP != "fd00::2" {
		t.Errorf("decoded %+v", e)
	}

	c, _, err = DecodeObjects([]byte(`{"apiVersion": "v1", "kind": "EndpointsList", "items": []}`))
	if err != nil || !c.EndpointsListed {
		t.Errorf("an empty EndpointsList must set EndpointsListed (err %v)", err)
	}
	c, _, err = DecodeObjects([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: b}\n"))
	if err != nil || c.EndpointsListed {
		t.Errorf("EndpointsListed without Endpoints (err %v)", err)
	}
}
