package snapshot_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// roundTrip saves s as name in a temporary directory, loads it back and
// returns the loaded snapshot and the file's bytes.
func roundTrip(t *testing.T, s *snapshot.Snapshot, name string) (*snapshot.Snapshot, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := snapshot.Save(s, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return got, data
}

func exampleFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example snapshots (%v)", err)
	}
	return files
}

// testSnapshots are the snapshots the format is tried on, by name: the
// synthetic node with every kind of object, and every example.
func testSnapshots(t testing.TB) map[string]*snapshot.Snapshot {
	t.Helper()
	cases := map[string]*snapshot.Snapshot{"synthetic": richNode()}
	for _, f := range exampleFiles(t) {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = s
	}
	return cases
}

// TestBinaryRoundTrip: a snapshot saved as .snap loads back equal, field
// for field, for the synthetic node (with every kind of object) and every
// example; from the file and from its bytes.
func TestBinaryRoundTrip(t *testing.T) {
	cases := testSnapshots(t)
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			got, data := roundTrip(t, s, "s.snap")
			if !snapshot.IsBinary(data) {
				t.Fatalf("a .snap file starts with %q, not the binary magic", data[:16])
			}
			if !reflect.DeepEqual(got, s) {
				t.Errorf("loaded snapshot differs from the saved one:\n%s", firstDifference(s, got))
			}
			fromBytes, err := snapshot.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromBytes, s) {
				t.Errorf("decoded snapshot differs from the saved one:\n%s", firstDifference(s, fromBytes))
			}
			again, err := snapshot.Encode(got, "again.snap")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Error("encoding the loaded snapshot gives other bytes: the encoding is not deterministic")
			}
		})
	}
}

// firstDifference names the first part of two snapshots that differs.
func firstDifference(want, got *snapshot.Snapshot) string {
	switch {
	case !reflect.DeepEqual(want.Metadata, got.Metadata):
		return "metadata"
	case !reflect.DeepEqual(want.Nodes, got.Nodes):
		return "node states"
	case (want.Cluster == nil) != (got.Cluster == nil):
		return "cluster presence"
	}
	w, g := reflect.ValueOf(*want.Cluster), reflect.ValueOf(*got.Cluster)
	for i := range w.NumField() {
		if !reflect.DeepEqual(w.Field(i).Interface(), g.Field(i).Interface()) {
			return "cluster." + w.Type().Field(i).Name
		}
	}
	return "the header fields"
}

// TestBinaryFormatByContent: the format is read off the bytes, so a
// binary snapshot under a YAML name loads, and YAML and JSON are still
// written for their extensions.
func TestBinaryFormatByContent(t *testing.T) {
	s := snapshottest.Node(5, 2)
	dir := t.TempDir()
	bin := filepath.Join(dir, "s.snap")
	if err := snapshot.Save(s, bin); err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(dir, "renamed.yaml")
	if err := os.Rename(bin, renamed); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.Load(renamed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("the renamed binary snapshot loads different: %s", firstDifference(s, got))
	}
	for name, prefix := range map[string]string{"s.yaml": "apiVersion: ", "s.yml": "apiVersion: ", "s.json": "{\n  \"apiVersion\""} {
		b, err := snapshot.Encode(s, name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), prefix) {
			t.Errorf("%s starts with %q, want %q", name, b[:20], prefix)
		}
	}
}

// TestBinaryBareDump: a snapshot without API objects round trips with no
// Cluster, and an empty one too.
func TestBinaryBareDump(t *testing.T) {
	s := snapshottest.Node(3, 1)
	s.Cluster = nil
	s.Nodes = append(s.Nodes, snapshot.NodeState{Name: "node2", Dumps: []snapshot.Dump{{Collector: snapshot.CollectorConntrack}}})
	if got, _ := roundTrip(t, s, "bare.snap"); !reflect.DeepEqual(got, s) {
		t.Errorf("bare dump differs: %s", firstDifference(s, got))
	}
	empty := &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind, Cluster: &snapshot.Cluster{}}
	if got, _ := roundTrip(t, empty, "empty.snap"); !reflect.DeepEqual(got, empty) {
		t.Errorf("empty snapshot differs: %s", firstDifference(empty, got))
	}
}

// TestBinaryChecksNodes: the checks of a YAML snapshot's node states hold
// for a binary one.
func TestBinaryChecksNodes(t *testing.T) {
	s := snapshottest.Node(2, 1)
	s.Nodes[0].Dumps[0].Collector = ""
	b, err := snapshot.Encode(s, "s.snap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Decode(b); err == nil || !strings.Contains(err.Error(), "dumps[0] has no collector") {
		t.Errorf("error %v, want one about the dump without a collector", err)
	}
	s = snapshottest.Node(2, 1)
	s.Kind = "List"
	if b, err = snapshot.Encode(s, "s.snap"); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Decode(b); err == nil || !strings.Contains(err.Error(), `kind is "List"`) {
		t.Errorf("error %v, want one about the kind", err)
	}
}
