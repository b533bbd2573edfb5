package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"
)

// The binary snapshot format (files named *.snap) is a container of
// sections, read without parsing what a question does not need:
//
//	offset  size  field
//	0       12    magic: "\x89SVCSNAP\r\n\x1a\n" (a text transfer that
//	              rewrites line ends or drops the high bit breaks it)
//	12      4     format version, uint32 little endian (binaryVersion)
//	16      4     section count n, uint32 little endian
//	20      24*n  section table: id [4]byte, offset uint64, length
//	              uint64, CRC-32 of the section's bytes uint32
//	20+24n  4     CRC-32 of bytes [0, 20+24n)
//
// then the sections, end to end in table order, the last ending at the end
// of the file. All integers are little endian. Section ids (secMeta, ...)
// name their content; a reader skips ids it does not know. Objects are the
// Kubernetes protobuf encoding of each object alone (see binary_objects.go),
// so that one can be decoded without the others; the indexes
// (binary_index.go) find them by name. The node states (secNodes) name
// where each dump's text lies in secText and, when some dump has an index
// of its own (Dump.Index, a data plane's), where it lies in secDumpIdx; a
// file without such an index has no secDumpIdx and no spans for it.
const (
	binaryMagic      = "\x89SVCSNAP\r\n\x1a\n"
	binaryVersion    = 1
	headerFixedSize  = 20
	sectionEntrySize = 24
	maxSections      = 256
)

// IsBinary reports whether data starts like a binary snapshot (*.snap),
// whatever the file's name.
func IsBinary(data []byte) bool {
	return bytes.HasPrefix(data, []byte(binaryMagic))
}

// looksBinary reports whether data is binary rather than YAML or JSON
// text: it starts with the magic's first byte (which no UTF-8 text starts
// with) or holds a NUL byte early on.
func looksBinary(data []byte) bool {
	head := data[:min(len(data), 4096)]
	return len(head) > 0 && (head[0] == binaryMagic[0] || bytes.IndexByte(head, 0) >= 0)
}

// checksum is the CRC-32 (IEEE) of b: hardware accelerated, and on this
// project's machines twice as fast as CRC-32 (1.5 ms against 3.2 ms for
// 50 MB), which counts when every load checks a node's dumps.
func checksum(b []byte) uint32 {
	return crc32.ChecksumIEEE(b)
}

// Section ids.
const (
	secMeta      = "META" // JSON: apiVersion, kind, metadata, cluster flags
	secNodes     = "NODE" // JSON: node states, dump texts (and indexes) as spans of secText (secDumpIdx)
	secText      = "TEXT" // the dump texts, raw, end to end
	secDumpIdx   = "DIDX" // the dumps' indexes, raw, end to end
	secNodeObjs  = "KNOD" // Node objects
	secServices  = "SVCS" // Service objects
	secSlices    = "ESLC" // EndpointSlice objects
	secEndpoints = "ENDP" // v1 Endpoints objects
	secPods      = "PODS" // Pod objects
	secAddrs     = "ADDR" // every endpoint address, sorted (binary_addrs.go)
	secIdxSvc    = "XSVC" // Services by namespace/name
	secIdxSlices = "XESL" // EndpointSlices by namespace/service-name label
	secIdxEps    = "XEND" // v1 Endpoints by namespace/name
	secIdxPods   = "XPOD" // Pods by namespace/name, with their labels
)

// sectionLabel names a section for messages: its id and what it holds.
func sectionLabel(id string) string {
	var what string
	switch id {
	case secMeta:
		what = "metadata"
	case secNodes:
		what = "node states"
	case secText:
		what = "dump texts"
	case secDumpIdx:
		what = "dump indexes"
	case secNodeObjs:
		what = "Nodes"
	case secServices:
		what = "Services"
	case secSlices:
		what = "EndpointSlices"
	case secEndpoints:
		what = "Endpoints"
	case secPods:
		what = "Pods"
	case secAddrs:
		what = "endpoint addresses"
	case secIdxSvc:
		what = "Service index"
	case secIdxSlices:
		what = "EndpointSlice index"
	case secIdxEps:
		what = "Endpoints index"
	case secIdxPods:
		what = "Pod index"
	default:
		return fmt.Sprintf("section %q", id)
	}
	return fmt.Sprintf("section %s (%s)", id, what)
}

// section is one entry of the section table.
type section struct {
	id     string
	offset uint64
	length uint64
	crc    uint32
}

// container is an open binary snapshot: its section table, and where to
// read the sections from.
type container struct {
	src      source
	sections map[string]section
}

// source gives the bytes of a binary snapshot: a whole file in memory, or
// an open file read piece by piece (a partial load).
type source interface {
	// at returns the n bytes at off; what names them for errors. The
	// bytes are never written to, by the source or its callers.
	at(off, n uint64, what string) ([]byte, error)
	size() uint64
	// text returns b, which at returned, as a string, without copying
	// it when the source's buffers are its own.
	text(b []byte) string
	// own returns b, which at returned, as bytes a snapshot may keep:
	// b itself when the source's buffers are its own, else a copy.
	own(b []byte) []byte
}

// memSource is a file in a buffer its caller owns: texts and indexes are
// copied out.
type memSource []byte

func (m memSource) size() uint64 { return uint64(len(m)) }

func (m memSource) text(b []byte) string { return string(b) }

func (m memSource) own(b []byte) []byte { return bytes.Clone(b) }

func (m memSource) at(off, n uint64, what string) ([]byte, error) {
	if off > uint64(len(m)) || n > uint64(len(m))-off {
		return nil, truncated(what, off, n, uint64(len(m)))
	}
	return m[off : off+n : off+n], nil
}

// fileSource reads a file piece by piece, each into a buffer of its own
// that nothing writes to after: a dump's text (and its index) is the
// section's buffer itself, not a copy (for a large node, tens of megabytes
// not copied).
type fileSource struct {
	r io.ReaderAt
	n uint64
}

func (f fileSource) size() uint64 { return f.n }

func (f fileSource) text(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (f fileSource) own(b []byte) []byte { return b }

func (f fileSource) at(off, n uint64, what string) ([]byte, error) {
	if off > f.n || n > f.n-off {
		return nil, truncated(what, off, n, f.n)
	}
	b := make([]byte, n)
	if _, err := f.r.ReadAt(b, int64(off)); err != nil {
		return nil, fmt.Errorf("reading %s at offset %d: %w", what, off, err)
	}
	return b, nil
}

func truncated(what string, off, n, size uint64) error {
	return fmt.Errorf("truncated file: %s spans bytes %d to %d, but the file has %d bytes", what, off, off+n, size)
}

// openContainer reads and checks the header and the section table: the
// magic, the version, the table's checksum, and that the sections lie end
// to end after it up to the end of the file.
func openContainer(src source) (*container, error) {
	head, err := src.at(0, headerFixedSize, "the header")
	if err != nil {
		return nil, err
	}
	if string(head[:len(binaryMagic)]) != binaryMagic {
		return nil, fmt.Errorf("not a binary snapshot: the file does not start with the magic %q", binaryMagic)
	}
	if v := binary.LittleEndian.Uint32(head[12:]); v != binaryVersion {
		return nil, fmt.Errorf("binary snapshot format version %d is not supported by this svctrace (it reads version %d)", v, binaryVersion)
	}
	n := binary.LittleEndian.Uint32(head[16:])
	if n > maxSections {
		return nil, fmt.Errorf("damaged header: %d sections, at most %d are possible", n, maxSections)
	}
	tableEnd := uint64(headerFixedSize) + uint64(n)*sectionEntrySize
	all, err := src.at(0, tableEnd+4, "the section table")
	if err != nil {
		return nil, err
	}
	if got, want := checksum(all[:tableEnd]), binary.LittleEndian.Uint32(all[tableEnd:]); got != want {
		return nil, fmt.Errorf("damaged header: the section table's checksum is %08x, want %08x", got, want)
	}
	c := &container{src: src, sections: map[string]section{}}
	next := tableEnd + 4
	for i := range uint64(n) {
		e := all[headerFixedSize+i*sectionEntrySize:]
		s := section{
			id:     string(e[:4]),
			offset: binary.LittleEndian.Uint64(e[4:]),
			length: binary.LittleEndian.Uint64(e[12:]),
			crc:    binary.LittleEndian.Uint32(e[20:]),
		}
		if s.offset != next {
			return nil, fmt.Errorf("damaged header: %s starts at offset %d, want %d (right after the one before)", sectionLabel(s.id), s.offset, next)
		}
		if s.length > src.size() || s.offset > src.size()-s.length {
			return nil, truncated(sectionLabel(s.id), s.offset, s.length, src.size())
		}
		if _, dup := c.sections[s.id]; dup {
			return nil, fmt.Errorf("damaged header: %s appears twice", sectionLabel(s.id))
		}
		c.sections[s.id] = s
		next = s.offset + s.length
	}
	if next != src.size() {
		return nil, fmt.Errorf("damaged file: %d bytes follow the last section (which ends at offset %d)", src.size()-next, next)
	}
	return c, nil
}

// read returns a whole section, checked against its checksum; a missing
// section is an error unless optional, and then nil.
func (c *container) read(id string, optional bool) ([]byte, error) {
	s, ok := c.sections[id]
	if !ok {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("damaged file: %s is missing", sectionLabel(id))
	}
	b, err := c.src.at(s.offset, s.length, sectionLabel(id))
	if err != nil {
		return nil, err
	}
	if got := checksum(b); got != s.crc {
		return nil, fmt.Errorf("damaged file: %s at offset %d (%d bytes) has checksum %08x, want %08x", sectionLabel(id), s.offset, s.length, got, s.crc)
	}
	return b, nil
}

// part returns n bytes at off inside a section, without checking the
// section's checksum (the caller checks what it reads).
func (c *container) part(id string, off, n uint64, what string) ([]byte, error) {
	s, ok := c.sections[id]
	if !ok {
		return nil, fmt.Errorf("damaged file: %s is missing", sectionLabel(id))
	}
	if off > s.length || n > s.length-off {
		return nil, fmt.Errorf("damaged file: %s: %s spans bytes %d to %d of a section of %d bytes", sectionLabel(id), what, off, off+n, s.length)
	}
	return c.src.at(s.offset+off, n, sectionLabel(id)+": "+what)
}

// containerWriter gathers sections and writes the file.
type containerWriter struct {
	ids  []string
	data [][]byte
}

func (w *containerWriter) add(id string, data []byte) {
	w.ids = append(w.ids, id)
	w.data = append(w.data, data)
}

func (w *containerWriter) bytes() []byte {
	tableEnd := headerFixedSize + len(w.ids)*sectionEntrySize
	total := tableEnd + 4
	for _, d := range w.data {
		total += len(d)
	}
	out := make([]byte, tableEnd, total)
	copy(out, binaryMagic)
	binary.LittleEndian.PutUint32(out[12:], binaryVersion)
	binary.LittleEndian.PutUint32(out[16:], uint32(len(w.ids)))
	off := uint64(tableEnd + 4)
	for i, id := range w.ids {
		e := out[headerFixedSize+i*sectionEntrySize:]
		copy(e[:4], id)
		binary.LittleEndian.PutUint64(e[4:], off)
		binary.LittleEndian.PutUint64(e[12:], uint64(len(w.data[i])))
		binary.LittleEndian.PutUint32(e[20:], checksum(w.data[i]))
		off += uint64(len(w.data[i]))
	}
	out = binary.LittleEndian.AppendUint32(out, checksum(out[:tableEnd]))
	for _, d := range w.data {
		out = append(out, d...)
	}
	return out
}
