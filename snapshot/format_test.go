package snapshot_test

import (
	"bytes"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestFormatByName: a snapshot file is binary unless its name asks for
// JSON or YAML; standard output (no name) is YAML.
func TestFormatByName(t *testing.T) {
	s := snapshottest.Node(2, 1)
	for name, want := range map[string]string{
		"node1.snap": "binary", "node1.snapshot": "binary", "node1": "binary",
		"node1.yaml": "yaml", "node1.yml": "yaml", "": "yaml", "node1.json": "json",
	} {
		data, err := snapshot.Encode(s, name)
		if err != nil {
			t.Fatal(err)
		}
		got := "yaml"
		switch {
		case snapshot.IsBinary(data):
			got = "binary"
		case bytes.HasPrefix(data, []byte("{")):
			got = "json"
		}
		if got != want {
			t.Errorf("%q is written as %s, want %s", name, got, want)
		}
		if _, err := snapshot.Decode(data); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}
