package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object section holds the objects of one kind, each encoded alone so
// that one can be read without the others:
//
//	count   uint32
//	table   count × {offset uint64, length uint32, CRC-32 uint32}, the
//	        offset counted from the end of the table
//	records count × {uvarint len, apiVersion, uvarint len, kind,
//	        the object's Kubernetes protobuf encoding}
//
// The protobuf encoding (the generated Marshal of k8s.io/api) leaves out
// TypeMeta, hence the two strings before it. The per-object checksum lets a
// partial load check what it reads without reading the whole section.
const objectEntrySize = 16

// protoObject is a Kubernetes API type with its generated protobuf methods.
type protoObject[T any] interface {
	*T
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// encodeObjects writes an object section; tm gives an object's TypeMeta
// and kind names the objects for errors.
func encodeObjects[T any, P protoObject[T]](objs []T, tm func(*T) *metav1.TypeMeta, kind string) ([]byte, error) {
	if uint64(len(objs)) > math.MaxUint32 {
		return nil, fmt.Errorf("%d %s are more than a snapshot holds", len(objs), kind)
	}
	tableEnd := 4 + len(objs)*objectEntrySize
	out := make([]byte, tableEnd)
	binary.LittleEndian.PutUint32(out, uint32(len(objs)))
	for i := range objs {
		start := len(out)
		t := tm(&objs[i])
		out = binary.AppendUvarint(out, uint64(len(t.APIVersion)))
		out = append(out, t.APIVersion...)
		out = binary.AppendUvarint(out, uint64(len(t.Kind)))
		out = append(out, t.Kind...)
		p := P(&objs[i])
		n := p.Size()
		out = slices.Grow(out, n)
		if _, err := p.MarshalToSizedBuffer(out[len(out) : len(out)+n]); err != nil {
			return nil, fmt.Errorf("encoding %s %d: %w", kind, i, err)
		}
		out = out[:len(out)+n]
		size := len(out) - start
		if size > math.MaxUint32 {
			return nil, fmt.Errorf("encoding %s %d: %d bytes are too many for one object", kind, i, size)
		}
		e := out[4+i*objectEntrySize:]
		binary.LittleEndian.PutUint64(e, uint64(start-tableEnd))
		binary.LittleEndian.PutUint32(e[8:], uint32(size))
		binary.LittleEndian.PutUint32(e[12:], checksum(out[start:]))
	}
	return out, nil
}

// objectTable is the table of an object section.
type objectTable struct {
	id    string
	count uint32
	// entries is the raw table, count × objectEntrySize bytes.
	entries []byte
	// records is how many bytes of records follow the table.
	records uint64
}

func parseObjectTable(id string, b []byte, sectionLen uint64) (objectTable, error) {
	if len(b) < 4 {
		return objectTable{}, fmt.Errorf("damaged file: %s is %d bytes, too short for its object count", sectionLabel(id), len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	end := 4 + uint64(n)*objectEntrySize
	if end > sectionLen {
		return objectTable{}, fmt.Errorf("damaged file: %s counts %d objects, whose table (%d bytes) does not fit in the section's %d bytes", sectionLabel(id), n, end, sectionLen)
	}
	return objectTable{id: id, count: n, records: sectionLen - end}, nil
}

// entry returns where object i's record lies, from the end of the table,
// and its checksum.
func (t objectTable) entry(i uint32) (off, n uint64, crc uint32, err error) {
	if i >= t.count || uint64(len(t.entries)) < uint64(t.count)*objectEntrySize {
		return 0, 0, 0, fmt.Errorf("damaged file: %s has no object %d (it holds %d)", sectionLabel(t.id), i, t.count)
	}
	e := t.entries[uint64(i)*objectEntrySize:]
	off = binary.LittleEndian.Uint64(e)
	n = uint64(binary.LittleEndian.Uint32(e[8:]))
	crc = binary.LittleEndian.Uint32(e[12:])
	if off > t.records || n > t.records-off {
		return 0, 0, 0, fmt.Errorf("damaged file: %s: the table puts object %d at bytes %d to %d of %d bytes of records", sectionLabel(t.id), i, off, off+n, t.records)
	}
	return off, n, crc, nil
}

func (t objectTable) recordsStart() uint64 { return 4 + uint64(t.count)*objectEntrySize }

// typeNames keeps the last apiVersion and kind decoded, so that a section
// of objects of one type shares two strings instead of making two each.
type typeNames struct{ apiVersion, kind string }

func (tn *typeNames) intern(last *string, b []byte) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// decodeRecord decodes one record into obj.
func decodeRecord[T any, P protoObject[T]](rec []byte, obj *T, tm func(*T) *metav1.TypeMeta, tn *typeNames) error {
	av, rest, err := readString(rec, "apiVersion")
	if err != nil {
		return err
	}
	kind, rest, err := readString(rest, "kind")
	if err != nil {
		return err
	}
	if err := P(obj).Unmarshal(rest); err != nil {
		return fmt.Errorf("protobuf: %w", err)
	}
	t := tm(obj)
	t.APIVersion = tn.intern(&tn.apiVersion, av)
	t.Kind = tn.intern(&tn.kind, kind)
	return nil
}

func readString(b []byte, what string) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("damaged %s", what)
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// decodeObjects decodes a whole object section, already checked against
// its checksum; nil when it holds none.
func decodeObjects[T any, P protoObject[T]](id string, b []byte, tm func(*T) *metav1.TypeMeta) ([]T, error) {
	t, err := parseObjectTable(id, b, uint64(len(b)))
	if err != nil || t.count == 0 {
		return nil, err
	}
	start := t.recordsStart()
	t.entries = b[4:start]
	out := make([]T, t.count)
	var tn typeNames
	for i := range t.count {
		off, n, _, err := t.entry(i)
		if err != nil {
			return nil, err
		}
		if err := decodeRecord[T, P](b[start+off:start+off+n], &out[i], tm, &tn); err != nil {
			return nil, fmt.Errorf("damaged file: %s: object %d of %d (at offset %d of the section): %w", sectionLabel(id), i, t.count, start+off, err)
		}
	}
	return out, nil
}

// objectReader reads chosen objects of one section from a container,
// checking each against its own checksum.
type objectReader struct {
	c     *container
	table objectTable
}

func newObjectReader(c *container, id string) (*objectReader, error) {
	s, ok := c.sections[id]
	if !ok {
		return nil, fmt.Errorf("damaged file: %s is missing", sectionLabel(id))
	}
	head, err := c.part(id, 0, min(4, s.length), "object count")
	if err != nil {
		return nil, err
	}
	t, err := parseObjectTable(id, head, s.length)
	if err != nil {
		return nil, err
	}
	return &objectReader{c: c, table: t}, nil
}

// loadEntries reads the table (only when some object is wanted).
func (r *objectReader) loadEntries() error {
	if r.table.entries != nil {
		return nil
	}
	b, err := r.c.part(r.table.id, 4, uint64(r.table.count)*objectEntrySize, "object table")
	if err != nil {
		return err
	}
	r.table.entries = b
	return nil
}

// decodeSome decodes the objects numbered which (sorted, no repeats), in
// that order; name says which object a number is, for errors. Records next
// to each other in the file are read together.
func decodeSome[T any, P protoObject[T]](r *objectReader, which []uint32, tm func(*T) *metav1.TypeMeta, name func(uint32) string) ([]T, error) {
	if len(which) == 0 {
		return nil, nil
	}
	if err := r.loadEntries(); err != nil {
		return nil, err
	}
	out := make([]T, len(which))
	var tn typeNames
	start := r.table.recordsStart()
	for i := 0; i < len(which); {
		// The run which[i:j] lies end to end in the file.
		first, _, _, err := r.table.entry(which[i])
		if err != nil {
			return nil, err
		}
		end := first
		j := i
		for ; j < len(which); j++ {
			off, n, _, err := r.table.entry(which[j])
			if err != nil {
				return nil, err
			}
			if off != end {
				break
			}
			end += n
		}
		run, err := r.c.part(r.table.id, start+first, end-first, fmt.Sprintf("objects %d to %d", which[i], which[j-1]))
		if err != nil {
			return nil, err
		}
		for k := i; k < j; k++ {
			off, n, crc, _ := r.table.entry(which[k])
			rec := run[off-first : off-first+n]
			fail := func(format string, args ...any) error {
				return fmt.Errorf("damaged file: %s: object %d (%s, at offset %d of the section): %s", sectionLabel(r.table.id), which[k], name(which[k]), start+off, fmt.Sprintf(format, args...))
			}
			if got := checksum(rec); got != crc {
				return nil, fail("checksum %08x, want %08x", got, crc)
			}
			if err := decodeRecord[T, P](rec, &out[k], tm, &tn); err != nil {
				return nil, fail("%v", err)
			}
		}
		i = j
	}
	return out, nil
}
