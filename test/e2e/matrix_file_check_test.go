//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/svctrace/svctrace/test/lab"
)

// fakePods is a pod table as startMatrix makes it, with addresses such as
// the lab gives.
func fakePods() map[string]*lab.Pod {
	pods := map[string]*lab.Pod{}
	for _, p := range []lab.Pod{
		{Name: "web-1", Node: "node1", IP: "10.244.1.2"},
		{Name: "web-2", Node: "node1", IP: "10.244.1.3"},
		{Name: "web-3", Node: "node2", IP: "10.244.2.2"},
		{Name: "dns-1", Node: "node1", IP: "10.244.1.4"},
		{Name: "dns-2", Node: "node2", IP: "10.244.2.3"},
		{Name: "client", Node: "node1", IP: "10.244.1.5"},
		{Name: "client-2", Node: "node2", IP: "10.244.2.4"},
	} {
		pods[p.Name] = &p
	}
	return pods
}

func fakeNodeIP(name string) (string, bool) {
	ip, ok := map[string]string{"node1": "192.0.2.10", "node2": "192.0.2.11"}[name]
	return ip, ok
}

// TestMatrixFile expands the matrix file for a fake pod table and compares
// the objects with the ones the lab sent before the matrix moved into the
// file (the golden file), as the API server reads them.
func TestMatrixFile(t *testing.T) {
	m, all := expandedMatrix(t)
	got := m.services + "---\n" + slicesYAML(all, nil)
	if *update {
		head := "# What startMatrix sends to the API server, for the pod and node\n" +
			"# addresses of TestMatrixFile: the Services, then the EndpointSlices.\n" +
			"# Rewrite with go test ./test/e2e -run TestMatrixFile -update.\n"
		if err := os.WriteFile(matrixGolden, []byte(head+got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(matrixGolden)
	if err != nil {
		t.Fatal(err)
	}
	compareObjects(t, apiObjects(t, got), apiObjects(t, string(want)))
}

// apiObjects decodes YAML documents as the lab's Apply does.
func apiObjects(t *testing.T, text string) []map[string]any {
	t.Helper()
	rd := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var out []map[string]any
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := k8syaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatal(err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

func compareObjects(t *testing.T, got, want []map[string]any) {
	t.Helper()
	name := func(o map[string]any) string {
		md, _ := o["metadata"].(map[string]any)
		return fmt.Sprintf("%v %v", o["kind"], md["name"])
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			t.Errorf("object %d: missing %s", i+1, name(want[i]))
		case i >= len(want):
			t.Errorf("object %d: extra %s", i+1, name(got[i]))
		case !reflect.DeepEqual(got[i], want[i]):
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("object %d (%s):\n got %s\nwant %s", i+1, name(want[i]), g, w)
		}
	}
}

// TestMatrixChange checks the change callback that checkChanges uses: it
// edits one slice's endpoints and leaves the matrix as it was.
func TestMatrixChange(t *testing.T) {
	_, all := expandedMatrix(t)
	dropWeb2 := func(name string, eps []endpoint) []endpoint {
		if name != "web-1" {
			return eps
		}
		return slices.DeleteFunc(slices.Clone(eps), func(e endpoint) bool { return e.pod == "web-2" })
	}
	changed := apiObjects(t, slicesYAML(all, dropWeb2))
	whole := apiObjects(t, slicesYAML(all, nil))
	for i := range whole {
		eps, _ := changed[i]["endpoints"].([]any)
		before, _ := whole[i]["endpoints"].([]any)
		n := len(before)
		md, _ := changed[i]["metadata"].(map[string]any)
		if md["name"] == "web-1" {
			n--
		}
		if len(eps) != n {
			t.Errorf("EndpointSlice %v: %d endpoints after the change, want %d", md["name"], len(eps), n)
		}
	}
	if again := apiObjects(t, slicesYAML(all, nil)); !reflect.DeepEqual(again, whole) {
		t.Error("the change edited the matrix itself")
	}
}

// TestMatrixFileErrors gives broken matrix files and wants errors naming
// the fault and its line, from reading the file or from expanding it.
func TestMatrixFileErrors(t *testing.T) {
	const svc = `service:
  apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: default}
  spec:
    ports: [{name: http, port: 80, protocol: TCP}]
`
	const web1 = svc + "slices:\n- name: web-1\n  ports: [{name: http, port: 8080, protocol: TCP}]\n"
	for _, c := range []struct{ name, file, want string }{
		{"empty", "# nothing\n", "m.yaml: no Service"},
		{"not YAML", "service: [\n", "document 1: yaml: line"},
		{"unknown field", svc + "slice: []\n", "line 7: field slice not found"},
		{"no service", "slices: []\n", "document 1: no service manifest"},
		{"not a Service", strings.Replace(svc, "kind: Service", "kind: Pod", 1), "line 2: service is a v1 Pod, want a v1 Service"},
		{"other namespace", strings.Replace(svc, "namespace: default", "namespace: kube-system", 1), `service web is in namespace "kube-system"`},
		{"second Service", svc + "---\n" + svc, "document 2: a second Service web"},
		{"unnamed slice", svc + "slices:\n- ports: []\n", "an EndpointSlice without a name"},
		{"no ports", svc + "slices:\n- name: web-1\n", "EndpointSlice web-1 has no ports"},
		{"foreign port", strings.Replace(web1, "8080, protocol: TCP", "8080, protocol: UDP", 1), `port "http" (UDP) is no port of the Service`},
		{"port out of range", strings.Replace(web1, "8080", "0", 1), "number 0 is out of range"},
		{"second slice", web1 + strings.TrimPrefix(web1, svc+"slices:\n"), "a second EndpointSlice web-1"},
		{"endpoint sequence", web1 + "  endpoints: [[web-1]]\n", "line 10: an endpoint is a pod's name or a mapping"},
		{"unknown endpoint field", web1 + "  endpoints: [{pod: web-1, zones: a}]\n", `line 10: unknown endpoint field "zones"`},
		{"empty endpoint", web1 + "  endpoints: [{ready: false}]\n", "line 10: an endpoint needs a pod, an address or a nodeAddress"},
		{"two addresses", web1 + "  endpoints: [{address: 10.0.0.1, nodeAddress: node1}]\n", "line 10: an endpoint has an address or a nodeAddress, not both"},
		{"node of a pod", web1 + "  endpoints: [{pod: web-1, node: node2}]\n", "line 10: an endpoint of pod web-1 is on the pod's node"},
		{"bad address", web1 + "  endpoints: [{address: 2001:db8::1}]\n", `line 10: endpoint address "2001:db8::1" is no IPv4 address`},
		{"bad condition", web1 + "  endpoints: [{pod: web-1, ready: maybe}]\n", "endpoint at line 10"},
		{"no such pod", web1 + "  endpoints:\n  - web-1\n  - web-9\n", "m.yaml:12: EndpointSlice web-1: no lab pod web-9"},
		{"no such node", web1 + "  endpoints:\n  - web-1\n  - {nodeAddress: node3}\n", "m.yaml:12: EndpointSlice web-1: no lab node node3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseMatrix("m.yaml", []byte(c.file))
			if err == nil {
				_, err = m.expand(fakePods(), fakeNodeIP)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one with %q", err, c.want)
			}
		})
	}
}

// expandedMatrix loads the matrix file and expands it for the fake pod
// table.
func expandedMatrix(t *testing.T) (*matrix, []matrixSlice) {
	t.Helper()
	m, err := loadMatrix(matrixFile)
	if err != nil {
		t.Fatal(err)
	}
	all, err := m.expand(fakePods(), fakeNodeIP)
	if err != nil {
		t.Fatal(err)
	}
	return m, all
}
