package snapshot_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// indexMarker starts every index of indexedNodes: text found in no other
// part of the snapshot.
const indexMarker = "dump-index-marker"

// indexedNodes is the synthetic node with three node states: node1's
// three dumps with an index, none, and an index; node2 with one dump and
// no index; node3 with no dump at all.
func indexedNodes() *snapshot.Snapshot {
	s := snapshottest.Node(5, 2)
	n1 := &s.Nodes[0]
	text := n1.Dumps[0].Text
	n1.Dumps[0].Index = []byte(indexMarker + "-1-0\x00\x01\x02")
	n1.Dumps = append(n1.Dumps,
		snapshot.Dump{Collector: "ip6tables-save", Family: "IPv6", Backend: "nf_tables", Text: "*filter\nCOMMIT\n"},
		snapshot.Dump{Collector: "iptables-save", Family: "IPv4", Backend: "legacy", Text: text,
			Index: []byte(indexMarker + "-1-2 longer than the other one")})
	s.Nodes = append(s.Nodes,
		snapshot.NodeState{Name: "node2", Dumps: []snapshot.Dump{{Collector: snapshot.CollectorConntrack, Text: "conntrack\n"}}},
		snapshot.NodeState{Name: "node3"})
	return s
}

// nodeWire is the content of section NODE as this test edits it.
type nodeWire struct {
	Nodes   json.RawMessage `json:"nodes"`
	Texts   [][][2]uint64   `json:"texts"`
	Indexes [][][2]uint64   `json:"indexes,omitempty"`
}

// section returns the bytes of section id of a binary snapshot.
func section(t *testing.T, data []byte, id string) []byte {
	t.Helper()
	ids, offsets, lengths := snapshot.Sections(data)
	i := slices.Index(ids, id)
	if i < 0 {
		t.Fatalf("no section %s in %v", id, ids)
	}
	return data[offsets[i] : offsets[i]+lengths[i]]
}

// rebuild lays out the sections of data again, as the format says, with
// edit applied to each section's id and bytes: an edit returning an empty
// id drops the section.
func rebuild(t *testing.T, data []byte, edit func(id string, b []byte) (string, []byte)) []byte {
	t.Helper()
	ids, offsets, lengths := snapshot.Sections(data)
	var keep []string
	var secs [][]byte
	for i, id := range ids {
		id, b := edit(id, slices.Clone(data[offsets[i]:offsets[i]+lengths[i]]))
		if id != "" {
			keep, secs = append(keep, id), append(secs, b)
		}
	}
	tableEnd := 20 + 24*len(keep)
	out := slices.Clone(data[:16])
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keep)))
	off := uint64(tableEnd + 4)
	for i, id := range keep {
		out = append(out, id...)
		out = binary.LittleEndian.AppendUint64(out, off)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(secs[i])))
		out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(secs[i]))
		off += uint64(len(secs[i]))
	}
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
	for _, b := range secs {
		out = append(out, b...)
	}
	return out
}

// editNodes rewrites section NODE of data with edit.
func editNodes(t *testing.T, data []byte, edit func(*nodeWire)) []byte {
	t.Helper()
	return rebuild(t, data, func(id string, b []byte) (string, []byte) {
		if id != "NODE" {
			return id, b
		}
		var w nodeWire
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		edit(&w)
		out, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		return id, out
	})
}

// TestDumpIndexRoundTrip: dumps' indexes come back from a whole load, a
// partial load (the file and its bytes) and the bytes; a dump without one
// has a nil Index; the section and the spans are as documented.
func TestDumpIndexRoundTrip(t *testing.T) {
	s := indexedNodes()
	got, data := roundTrip(t, s, "indexed.snap")
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("loaded snapshot differs from the saved one: %s", firstDifference(s, got))
	}
	if ids, _, _ := snapshot.Sections(data); slices.Index(ids, "DIDX") != slices.Index(ids, "TEXT")+1 {
		t.Errorf("sections %v: want DIDX right after TEXT", ids)
	}
	idx := section(t, data, "DIDX")
	if want := string(s.Nodes[0].Dumps[0].Index) + string(s.Nodes[0].Dumps[2].Index); string(idx) != want {
		t.Errorf("section DIDX holds %q, want the indexes end to end, %q", idx, want)
	}
	var w nodeWire
	if err := json.Unmarshal(section(t, data, "NODE"), &w); err != nil {
		t.Fatal(err)
	}
	l0, l2 := uint64(len(s.Nodes[0].Dumps[0].Index)), uint64(len(s.Nodes[0].Dumps[2].Index))
	want := [][][2]uint64{{{0, l0}, {0, 0}, {l0, l2}}, {{0, 0}}, {}}
	if !reflect.DeepEqual(w.Indexes, want) {
		t.Errorf("node states' indexes %v, want %v", w.Indexes, want)
	}
	if bytes.Contains(section(t, data, "NODE"), []byte(base64.StdEncoding.EncodeToString([]byte(indexMarker)[:12]))) {
		t.Error("section NODE holds an index in base64 as well as its span")
	}
	if got.Nodes[0].Dumps[1].Index != nil || got.Nodes[1].Dumps[0].Index != nil {
		t.Error("a dump saved without an index loads with one")
	}

	// An index is its own: appending to one cannot write over the next.
	if first := got.Nodes[0].Dumps[0].Index; cap(first) != len(first) {
		t.Errorf("an index of %d bytes has a capacity of %d: appending to it writes over the next", len(first), cap(first))
	}

	// From bytes the caller owns: the indexes are copied out of them.
	fromBytes, err := snapshot.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	clear(data)
	if !reflect.DeepEqual(fromBytes.Nodes, s.Nodes) {
		t.Error("the indexes of a snapshot decoded from bytes change with those bytes")
	}

	path := filepath.Join(t.TempDir(), "indexed.snap")
	if err := snapshot.Save(s, path); err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]types.NamespacedName{nil, {{Namespace: "ns-1", Name: "svc-1"}}} {
		part, err := snapshot.LoadPartial(path, names)
		if err != nil {
			t.Fatal(err)
		}
		if part.Cluster.Partial == nil {
			t.Fatalf("%v: not a partial load", names)
		}
		if !reflect.DeepEqual(part.Nodes, s.Nodes) {
			t.Errorf("%v: a partial load's node states differ from the saved ones (indexes %q)", names, part.Nodes[0].Dumps[0].Index)
		}
	}

	merged := snapshot.Merge(snapshottest.Node(1, 1), got)
	if n, ok := merged.Node("node1"); !ok || !bytes.Equal(n.Dumps[2].Index, s.Nodes[0].Dumps[2].Index) {
		t.Error("Merge dropped a dump's index")
	}
}

// TestDumpIndexNone: a snapshot whose dumps have no index, or an empty
// one, is written as before indexes were (no DIDX section, no indexes in
// NODE) and loads with every Index nil.
func TestDumpIndexNone(t *testing.T) {
	s := indexedNodes()
	for i := range s.Nodes {
		for j := range s.Nodes[i].Dumps {
			s.Nodes[i].Dumps[j].Index = nil
		}
	}
	s.Nodes[0].Dumps[1].Index = []byte{}
	got, data := roundTrip(t, s, "plain.snap")
	if ids, _, _ := snapshot.Sections(data); slices.Contains(ids, "DIDX") {
		t.Errorf("sections %v: a file without an index has a DIDX section", ids)
	}
	if bytes.Contains(section(t, data, "NODE"), []byte(`"indexes"`)) {
		t.Error("section NODE of a file without an index names indexes")
	}
	for i, n := range got.Nodes {
		for j, d := range n.Dumps {
			if d.Index != nil {
				t.Errorf("node %d dump %d: Index %q, want nil", i, j, d.Index)
			}
		}
	}
	s.Nodes[0].Dumps[1].Index = nil
	if !reflect.DeepEqual(got, s) {
		t.Errorf("loaded snapshot differs from the saved one: %s", firstDifference(s, got))
	}
}

// TestDumpIndexNotExported: YAML and JSON hold no index (neither raw, nor
// in base64, nor a key for it), and load back without one.
func TestDumpIndexNotExported(t *testing.T) {
	s := indexedNodes()
	for _, name := range []string{"s.yaml", "s.json"} {
		out, err := snapshot.Encode(s, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, marker := range []string{indexMarker, base64.StdEncoding.EncodeToString([]byte(indexMarker)[:12])} {
			if bytes.Contains(out, []byte(marker)) {
				t.Errorf("%s holds the index (%q)", name, marker)
			}
		}
		j, err := yaml.YAMLToJSON(out)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Nodes []struct {
				Dumps []map[string]any `json:"dumps"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(j, &doc); err != nil {
			t.Fatal(err)
		}
		for i, n := range doc.Nodes {
			for k, d := range n.Dumps {
				for key := range d {
					if strings.Contains(strings.ToLower(key), "index") {
						t.Errorf("%s: nodes[%d].dumps[%d] has the key %q", name, i, k, key)
					}
				}
			}
		}
		back, err := snapshot.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		if back.Nodes[0].Dumps[0].Index != nil {
			t.Errorf("%s loads back with an index", name)
		}
	}
}

// TestDumpIndexDamage: spans that do not fit, counts that do not match
// the node states, a missing, cut or changed DIDX section: both loads say
// which node and dump, the span and the section's size.
func TestDumpIndexDamage(t *testing.T) {
	data, err := snapshot.Encode(indexedNodes(), "s.snap")
	if err != nil {
		t.Fatal(err)
	}
	size := len(section(t, data, "DIDX"))
	l0 := len(indexedNodes().Nodes[0].Dumps[0].Index)
	damaged(t, "span past the end", editNodes(t, data, func(w *nodeWire) { w.Indexes[0][2][1]++ }),
		fmt.Sprintf("section NODE (node states): the index of node 0 (node1) dump 2 spans bytes %d to %d of section DIDX (dump indexes) of %d bytes", l0, size+1, size))
	damaged(t, "span starting past the end", editNodes(t, data, func(w *nodeWire) { w.Indexes[1][0] = [2]uint64{uint64(size) + 5, 0} }),
		fmt.Sprintf("the index of node 1 (node2) dump 0 spans bytes %d to %d of section DIDX (dump indexes) of %d bytes", size+5, size+5, size))
	damaged(t, "huge span", editNodes(t, data, func(w *nodeWire) { w.Indexes[0][0][1] = 1 << 63 }),
		"the index of node 0 (node1) dump 0 spans bytes 0 to 9223372036854775808 of section DIDX (dump indexes)")
	damaged(t, "indexes for fewer nodes", editNodes(t, data, func(w *nodeWire) { w.Indexes = w.Indexes[:2] }),
		"damaged file: section NODE (node states): 3 nodes but indexes for 2")
	damaged(t, "indexes for fewer dumps", editNodes(t, data, func(w *nodeWire) { w.Indexes[0] = w.Indexes[0][:2] }),
		"damaged file: section NODE (node states): node 0 (node1) has 3 dumps but indexes for 2")
	damaged(t, "indexes for more dumps", editNodes(t, data, func(w *nodeWire) { w.Indexes[2] = [][2]uint64{{0, 0}} }),
		"node 2 (node3) has 0 dumps but indexes for 1")

	noSection := rebuild(t, data, func(id string, b []byte) (string, []byte) {
		if id == "DIDX" {
			return "", nil
		}
		return id, b
	})
	damaged(t, "DIDX missing", noSection,
		fmt.Sprintf("damaged file: section NODE (node states): the index of node 0 (node1) dump 0 spans bytes 0 to %d of section DIDX (dump indexes), which is missing", l0))
	// Without the section, spans of length 0 name nothing missing.
	noneNeeded := editNodes(t, noSection, func(w *nodeWire) {
		w.Indexes[0][0], w.Indexes[0][2] = [2]uint64{}, [2]uint64{}
	})
	if s, err := snapshot.Decode(noneNeeded); err != nil || s.Nodes[0].Dumps[0].Index != nil {
		t.Errorf("no DIDX and only empty spans: %v, want a load without indexes", err)
	}

	ids, offsets, lengths := snapshot.Sections(data)
	i := slices.Index(ids, "DIDX")
	flipped := slices.Clone(data)
	flipped[offsets[i]+lengths[i]/2] ^= 0x20
	damaged(t, "DIDX changed", flipped, "section DIDX (dump indexes) at offset", "checksum")
	damaged(t, "DIDX cut", data[:offsets[i]+lengths[i]/2], "truncated file: section DIDX (dump indexes)")
}

// FuzzDecodeDumpIndex: FuzzDecodeBinary's checks on a file with dump
// indexes (a seed it lacks): no input panics, whole or in part, as given
// or with its checksums made right; what decodes encodes again, with the
// same indexes.
func FuzzDecodeDumpIndex(f *testing.F) {
	data, err := snapshot.Encode(indexedNodes(), "seed.snap")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	names := []types.NamespacedName{{Namespace: "ns-1", Name: "svc-1"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, snapshot.FixChecksums(data)} {
			if s, err := snapshot.Decode(in); err == nil {
				again, err := snapshot.Encode(s, "again.snap")
				if err != nil {
					t.Fatalf("a decoded snapshot does not encode: %v", err)
				}
				back, err := snapshot.Decode(again)
				if err != nil {
					t.Fatalf("a snapshot encoded again does not decode: %v", err)
				}
				if !reflect.DeepEqual(back.Nodes, s.Nodes) {
					t.Error("node states (or their indexes) change when encoded again")
				}
			} else if err.Error() == "" {
				t.Error("an empty error message")
			}
			if _, err := snapshot.DecodePartialBytes(in, names); err != nil && err.Error() == "" {
				t.Error("an empty error message")
			}
		}
	})
}
