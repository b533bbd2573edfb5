package snapshot_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// damaged writes data to a file and loads it whole and in part; both must
// fail with an error naming the file and containing every one of want.
func damaged(t *testing.T, label string, data []byte, want ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "damaged.snap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, load := range []struct {
		name string
		fn   func() (*snapshot.Snapshot, error)
	}{
		{"Load", func() (*snapshot.Snapshot, error) { return snapshot.Load(path) }},
		{"LoadPartial", func() (*snapshot.Snapshot, error) {
			return snapshot.LoadPartial(path, []types.NamespacedName{{Namespace: "ns-3", Name: "svc-3"}})
		}},
	} {
		_, err := load.fn()
		if err == nil {
			t.Errorf("%s: %s of a damaged file succeeded", label, load.name)
			continue
		}
		for _, w := range append([]string{path}, want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %s: error %q does not say %q", label, load.name, err, w)
			}
		}
	}
}

func encodedNode(t *testing.T) []byte {
	t.Helper()
	s := richNode()
	data, err := snapshot.Encode(s, "s.snap")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBinaryTruncated: a file cut anywhere (in the magic, the header,
// the table, at a section's start, in its middle, one byte short) fails
// with a message that says so and where.
func TestBinaryTruncated(t *testing.T) {
	data := encodedNode(t)
	ids, offsets, lengths := snapshot.Sections(data)
	cuts := map[int]string{0: "empty file", 5: "truncated file: its 5 bytes are the start of a binary snapshot's magic", 14: "truncated file: the header", 40: "truncated file: the section table"}
	for i, id := range ids {
		cuts[int(offsets[i])] = "truncated file: section " + id
		cuts[int(offsets[i]+lengths[i]/2)] = "truncated file: section " + id
	}
	cuts[len(data)-1] = "truncated file: section " + ids[len(ids)-1]
	for at, want := range cuts {
		damaged(t, fmt.Sprintf("cut at %d", at), data[:at], want)
	}
}

// TestBinaryHeaderDamage: a wrong magic, version, section count or
// length, and a table that does not match its checksum.
func TestBinaryHeaderDamage(t *testing.T) {
	data := encodedNode(t)
	ids, _, lengths := snapshot.Sections(data)
	with := func(at int, b ...byte) []byte {
		out := slices.Clone(data)
		copy(out[at:], b)
		return out
	}
	damaged(t, "magic", with(1, 'X'), "does not start with the magic of a binary snapshot")
	damaged(t, "version", with(12, 2), "binary snapshot format version 2 is not supported", "reads version 1")
	damaged(t, "count", with(16, 0xff, 0xff), "damaged header: 65535 sections")
	damaged(t, "table checksum", with(30, 0xff), "section table's checksum")
	svcs := slices.Index(ids, "SVCS")
	damaged(t, "a section longer", snapshot.SetSectionLength(data, svcs, lengths[svcs]+1), "section ESLC (EndpointSlices) starts at offset")
	last := len(ids) - 1
	damaged(t, "the last section longer", snapshot.SetSectionLength(data, last, lengths[last]+1), "truncated file: section "+ids[last])
	damaged(t, "the last section shorter", snapshot.SetSectionLength(data, last, lengths[last]-1), "1 bytes follow the last section")
	damaged(t, "a huge section", snapshot.SetSectionLength(data, svcs, 1<<62), "truncated file: section SVCS (Services)")
}

// TestBinarySectionDamage: a changed byte is found by the checksum of its
// section (or, in a partial load, of its object) and named; behind fixed
// checksums, the decoder itself names the object.
func TestBinarySectionDamage(t *testing.T) {
	data := encodedNode(t)
	ids, offsets, lengths := snapshot.Sections(data)
	for i, id := range ids {
		out := slices.Clone(data)
		out[offsets[i]+lengths[i]-1] ^= 0x55
		path := filepath.Join(t.TempDir(), "flipped.snap")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := snapshot.Load(path)
		if want := fmt.Sprintf("section %s", id); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("byte changed in %s: error %v, want a checksum error naming %q", id, err, want)
		}
	}

	// The record of ns-3/svc-3 (Service 3): its last byte changed.
	svcs := slices.Index(ids, "SVCS")
	sec := data[offsets[svcs] : offsets[svcs]+lengths[svcs]]
	count := binary.LittleEndian.Uint32(sec)
	recs := 4 + 16*uint64(count)
	e := sec[4+3*16:]
	recStart := offsets[svcs] + recs + binary.LittleEndian.Uint64(e)
	recEnd := recStart + uint64(binary.LittleEndian.Uint32(e[8:]))
	out := slices.Clone(data)
	out[recEnd-1] ^= 0xff
	_, err := snapshot.DecodePartialBytes(out, []types.NamespacedName{{Namespace: "ns-3", Name: "svc-3"}})
	if err == nil || !strings.Contains(err.Error(), "object 3 (ns-3/svc-3") || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("partial load of a changed Service: error %v, want a checksum error naming object 3 (ns-3/svc-3)", err)
	}
	if _, err := snapshot.DecodePartialBytes(out, []types.NamespacedName{{Namespace: "ns-4", Name: "svc-4"}}); err != nil {
		t.Errorf("partial load of a Service next to the changed one: %v", err)
	}

	// The protobuf of Service 3 damaged behind right checksums: the
	// record is "\x02v1\x07Service" then the protobuf, whose first field
	// (0x0a, ObjectMeta) is given a length of 16383, past the record's end.
	out = slices.Clone(data)
	if string(out[recStart:recStart+12]) != "\x02v1\x07Service\x0a" {
		t.Fatalf("record of Service 3 starts with %q", out[recStart:recStart+12])
	}
	copy(out[recStart+12:], []byte{0xff, 0x7f})
	out = snapshot.FixChecksums(out)
	_, err = snapshot.Decode(out)
	if err == nil || !strings.Contains(err.Error(), "section SVCS (Services): object 3 of 41") || !strings.Contains(err.Error(), "protobuf") {
		t.Errorf("whole load of a broken Service: error %v, want one naming object 3 of 41 and protobuf", err)
	}
	_, err = snapshot.DecodePartialBytes(out, []types.NamespacedName{{Namespace: "ns-3", Name: "svc-3"}})
	if err == nil || !strings.Contains(err.Error(), "object 3 (ns-3/svc-3") || !strings.Contains(err.Error(), "protobuf") {
		t.Errorf("partial load of a broken Service: error %v, want one naming ns-3/svc-3 and protobuf", err)
	}
}

// TestBinaryMissingSection: a file without a section it needs says which.
func TestBinaryMissingSection(t *testing.T) {
	data, err := snapshot.Encode(snapshottest.Node(3, 1), "s.snap")
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ := snapshot.Sections(data)
	// Rename the Service index: a reader skips the unknown id, and misses
	// the index.
	out := slices.Clone(data)
	copy(out[20+24*slices.Index(ids, "XSVC"):], "ZZZZ")
	out = snapshot.FixChecksums(out)
	_, err = snapshot.DecodePartialBytes(out, nil)
	if err == nil || !strings.Contains(err.Error(), "section XSVC (Service index) is missing") {
		t.Errorf("error %v, want one saying the Service index is missing", err)
	}
}
