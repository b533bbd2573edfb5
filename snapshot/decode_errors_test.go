package snapshot

import (
	"strings"
	"testing"
)

// TestDecodeFieldErrors: a field of the wrong kind is named by its path in
// the document, with what was expected, and no Go type names.
func TestDecodeFieldErrors(t *testing.T) {
	const head = "apiVersion: svctrace.dev/v1alpha1\nkind: Snapshot\n"
	for _, c := range []struct{ name, text, want string }{
		{"dumps not a list", head + "nodes:\n- name: node1\n  dumps: abc\n", `nodes[0].dumps: want a list, got a string ("abc")`},
		{"text a list", head + "nodes:\n- name: node1\n- name: node2\n  dumps:\n  - collector: iptables-save\n    text: [1]\n",
			"nodes[1].dumps[0].text: want a string, got a list"},
		{"unknown field", head + "nodes:\n- name: node1\n  dumps: []\n  colour: red\n", "nodes[0].colour: unknown field"},
		{"bad time", head + "metadata:\n  creationTimestamp: yesterday\n", `metadata.creationTimestamp: want a time (RFC 3339`},
		{"service port", head + "cluster:\n  services:\n  - metadata: {name: web}\n    spec:\n      ports: [{port: eighty}]\n",
			`cluster.services[0].spec.ports[0].port: want a whole number, got a string ("eighty")`},
		{"nodes an object", head + "nodes: {name: node1}\n", "nodes: want a list, got an object"},
		{"duplicate key", head + "nodes: []\nnodes: []\n", "not valid YAML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			for _, gone := range []string{"Go struct", "inspect.", "[]v1.", "json:", "unmarshal"} {
				if strings.Contains(err.Error(), gone) {
					t.Errorf("error %q shows decoder internals (%q)", err, gone)
				}
			}
		})
	}
}
