// Package wire is the encoding of the indexes data planes keep beside
// their dumps in a binary snapshot (snapshot.Dump.Index): numbers as
// varints (encoding/binary's), strings as a length and the bytes, lists as
// a count and the items. A Reader's first failure sticks, so a decoder
// reads a record's fields and checks Err once.
package wire

import (
	"encoding/binary"
	"fmt"
)

// Writer appends fields to Buf.
type Writer struct {
	Buf []byte
}

func (w *Writer) Uint(v uint64) { w.Buf = binary.AppendUvarint(w.Buf, v) }
func (w *Writer) Int(v int64)   { w.Buf = binary.AppendVarint(w.Buf, v) }

func (w *Writer) Str(s string) {
	w.Uint(uint64(len(s)))
	w.Buf = append(w.Buf, s...)
}

func (w *Writer) Strs(ss []string) {
	w.Uint(uint64(len(ss)))
	for _, s := range ss {
		w.Str(s)
	}
}

// Reader reads fields of Buf from Pos. The first failure is kept in Err,
// wrapping Damaged, and every later read returns a zero value.
type Reader struct {
	Buf     []byte
	Pos     int
	Err     error
	Damaged error
}

// Fail records a failure at the current position, unless one is recorded.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w: byte %d: %s", r.Damaged, r.Pos, fmt.Sprintf(format, args...))
	}
}

func (r *Reader) Uint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *Reader) Int() int64   { return readVarint(r, binary.Varint) }

// readVarint reads a number with decode (binary.Uvarint, binary.Varint).
func readVarint[T uint64 | int64](r *Reader, decode func([]byte) (T, int)) T {
	if r.Err != nil {
		return 0
	}
	v, n := decode(r.Buf[r.Pos:])
	if n <= 0 {
		r.Fail("bad or truncated number")
		return 0
	}
	r.Pos += n
	return v
}

// Small reads a count or position that must fit in an int32 and be at
// most limit.
func (r *Reader) Small(limit int) int {
	v := r.Uint()
	if v > uint64(limit) || v > 1<<31-1 {
		r.Fail("value %d out of range (at most %d)", v, limit)
		return 0
	}
	return int(v)
}

// Left is how many bytes are left to read.
func (r *Reader) Left() int { return len(r.Buf) - r.Pos }

func (r *Reader) Str() string {
	n := r.Uint()
	if r.Err == nil && n > uint64(r.Left()) {
		r.Fail("a string of %d bytes where %d are left", n, r.Left())
	}
	if r.Err != nil {
		return ""
	}
	s := string(r.Buf[r.Pos : r.Pos+int(n)])
	r.Pos += int(n)
	return s
}

func (r *Reader) Strs() []string {
	n := r.Small(r.Left())
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.Str()
	}
	return out
}

// End fails unless every byte was read.
func (r *Reader) End() {
	if r.Err == nil && r.Pos != len(r.Buf) {
		r.Fail("%d bytes left over", len(r.Buf)-r.Pos)
	}
}
