//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/svctrace/svctrace/test/lab"
)

// matrixFile holds the lab's scenario matrix: its Services and, per
// Service, its EndpointSlices as compact lists (the file's head comment
// tells their form).
const matrixFile = "testdata/matrix.yaml"

// matrix is the matrix file, read and checked.
type matrix struct {
	// name is the file's name.
	name string
	// services is every Service manifest, as YAML documents.
	services string
	slices   []sliceSpec
}

// matrixDoc is one document of the matrix file.
type matrixDoc struct {
	Service yaml.Node   `yaml:"service"`
	Slices  []sliceSpec `yaml:"slices"`
}

// loadMatrix reads and checks the matrix file at path.
func loadMatrix(path string) (*matrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return parseMatrix(path, data)
}

// parseMatrix reads the documents of a matrix file; name is the file's,
// for errors.
func parseMatrix(name string, data []byte) (*matrix, error) {
	m, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.name = name
	return m, nil
}

// parseDocs reads the documents of a matrix file.
func parseDocs(data []byte) (*matrix, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var services bytes.Buffer
	enc := yaml.NewEncoder(&services)
	enc.SetIndent(2)
	m := &matrix{}
	seen := map[string]bool{}
	for i := 1; ; i++ {
		var doc matrixDoc
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		svc, err := checkService(&doc.Service)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		for _, s := range doc.Slices {
			if err := s.check(svc); err != nil {
				return nil, fmt.Errorf("document %d, service %s: %w", i, svc.Metadata.Name, err)
			}
			if seen["slice "+s.Name] {
				return nil, fmt.Errorf("document %d: a second EndpointSlice %s", i, s.Name)
			}
			seen["slice "+s.Name] = true
			s.service = svc.Metadata.Name
			m.slices = append(m.slices, s)
		}
		if seen["service "+svc.Metadata.Name] {
			return nil, fmt.Errorf("document %d: a second Service %s", i, svc.Metadata.Name)
		}
		seen["service "+svc.Metadata.Name] = true
		if err := enc.Encode(&doc.Service); err != nil {
			return nil, fmt.Errorf("document %d: writing Service %s: %w", i, svc.Metadata.Name, err)
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no Service")
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the Services: %w", err)
	}
	m.services = services.String()
	return m, nil
}

// serviceHead is what the matrix needs of a Service manifest.
type serviceHead struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		Ports []struct {
			Name     string `yaml:"name"`
			Protocol string `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// checkService reads the head of a document's Service: a v1 Service in
// namespace default, the one the slices are written for.
func checkService(n *yaml.Node) (*serviceHead, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("no service manifest")
	}
	var h serviceHead
	if err := n.Decode(&h); err != nil {
		return nil, fmt.Errorf("service at line %d: %w", n.Line, err)
	}
	switch {
	case h.APIVersion != "v1" || h.Kind != "Service":
		return nil, fmt.Errorf("line %d: service is a %s %s, want a v1 Service", n.Line, h.APIVersion, h.Kind)
	case h.Metadata.Name == "":
		return nil, fmt.Errorf("line %d: service has no name", n.Line)
	case h.Metadata.Namespace != "default":
		return nil, fmt.Errorf("line %d: service %s is in namespace %q; the matrix is in namespace default", n.Line, h.Metadata.Name, h.Metadata.Namespace)
	}
	return &h, nil
}

// check tells whether the slice is whole and its ports are the Service's.
func (s sliceSpec) check(svc *serviceHead) error {
	if s.Name == "" {
		return errors.New("an EndpointSlice without a name")
	}
	if len(s.Ports) == 0 {
		return fmt.Errorf("EndpointSlice %s has no ports", s.Name)
	}
	for _, p := range s.Ports {
		found := false
		for _, sp := range svc.Spec.Ports {
			proto := sp.Protocol
			if proto == "" {
				proto = "TCP"
			}
			found = found || sp.Name == p.Name && proto == p.Protocol
		}
		if !found {
			return fmt.Errorf("EndpointSlice %s: port %q (%s) is no port of the Service", s.Name, p.Name, p.Protocol)
		}
		if p.Port < 1 || p.Port > 65535 {
			return fmt.Errorf("EndpointSlice %s: port %q: number %d is out of range", s.Name, p.Name, p.Port)
		}
	}
	return nil
}

var update = flag.Bool("update", false, "rewrite testdata/matrix.golden.yaml")

const matrixGolden = "testdata/matrix.golden.yaml"

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
	m, err := loadMatrix(matrixFile)
	if err != nil {
		t.Fatal(err)
	}
	all, err := m.expand(fakePods(), fakeNodeIP)
	if err != nil {
		t.Fatal(err)
	}
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
	m, err := loadMatrix(matrixFile)
	if err != nil {
		t.Fatal(err)
	}
	all, err := m.expand(fakePods(), fakeNodeIP)
	if err != nil {
		t.Fatal(err)
	}
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
