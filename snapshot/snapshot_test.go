package snapshot

import (
	"strings"
	"testing"
)

func TestDecodeErrors(t *testing.T) {
	for name, c := range map[string]struct{ text, want string }{
		"empty":        {"", "empty file"},
		"not yaml":     {"\t: [", "not a snapshot document"},
		"other kind":   {"apiVersion: v1\nkind: List\n", `kind is "List"`},
		"version":      {"apiVersion: svctrace.dev/v9\nkind: Snapshot\n", `apiVersion "svctrace.dev/v9" is not supported`},
		"unknown key":  {"apiVersion: svctrace.dev/v1alpha1\nkind: Snapshot\nnodez: []\n", "nodez: unknown field"},
		"nameless":     {"apiVersion: svctrace.dev/v1alpha1\nkind: Snapshot\nnodes:\n- dumps: []\n", "nodes[0] has no name"},
		"no collector": {"apiVersion: svctrace.dev/v1alpha1\nkind: Snapshot\nnodes:\n- name: n1\n  dumps:\n  - text: x\n", "dumps[0] has no collector"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
