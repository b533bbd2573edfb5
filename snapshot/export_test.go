package snapshot

import (
	"encoding/binary"

	"k8s.io/apimachinery/pkg/types"
)

// DecodePartialBytes is LoadPartial on a file's bytes.
func DecodePartialBytes(data []byte, services []types.NamespacedName) (*Snapshot, error) {
	return decodePartial(memSource(data), services)
}

// Sections returns the section table of a binary snapshot: id, offset and
// length of each, in file order; nil when the header is cut short.
func Sections(data []byte) (ids []string, offsets, lengths []uint64) {
	if len(data) < headerFixedSize {
		return nil, nil, nil
	}
	n := int(binary.LittleEndian.Uint32(data[16:]))
	if n > maxSections || len(data) < headerFixedSize+n*sectionEntrySize+4 {
		return nil, nil, nil
	}
	for i := range n {
		e := data[headerFixedSize+i*sectionEntrySize:]
		ids = append(ids, string(e[:4]))
		offsets = append(offsets, binary.LittleEndian.Uint64(e[4:]))
		lengths = append(lengths, binary.LittleEndian.Uint64(e[12:]))
	}
	return ids, offsets, lengths
}

// SetSectionLength changes the length of section i in the table (and
// nothing else) and fixes the table's checksum.
func SetSectionLength(data []byte, i int, length uint64) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint64(out[headerFixedSize+i*sectionEntrySize+12:], length)
	return fixHeader(out)
}

func fixHeader(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[16:]))
	end := headerFixedSize + n*sectionEntrySize
	binary.LittleEndian.PutUint32(data[end:], checksum(data[:end]))
	return data
}

// FixChecksums returns a copy of data with every checksum it can find made
// right: each object's in the object sections, each section's, and the
// section table's; so that damage behind the checksums can be tested.
func FixChecksums(data []byte) []byte {
	out := append([]byte(nil), data...)
	ids, offsets, lengths := Sections(out)
	size := uint64(len(out))
	for i, id := range ids {
		if offsets[i] > size || lengths[i] > size-offsets[i] {
			continue
		}
		sec := out[offsets[i] : offsets[i]+lengths[i]]
		switch id {
		case secNodeObjs, secServices, secSlices, secEndpoints, secPods:
			fixObjectChecksums(id, sec)
		}
		e := out[headerFixedSize+i*sectionEntrySize:]
		binary.LittleEndian.PutUint32(e[20:], checksum(sec))
	}
	if ids == nil {
		return out
	}
	return fixHeader(out)
}

func fixObjectChecksums(id string, sec []byte) {
	t, err := parseObjectTable(id, sec, uint64(len(sec)))
	if err != nil {
		return
	}
	start := t.recordsStart()
	t.entries = sec[4:start]
	for i := range t.count {
		off, n, _, err := t.entry(i)
		if err != nil {
			continue
		}
		binary.LittleEndian.PutUint32(t.entries[uint64(i)*objectEntrySize+12:], checksum(sec[start+off:start+off+n]))
	}
}
