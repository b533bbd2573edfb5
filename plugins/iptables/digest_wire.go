package iptables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// The digest's encoding: varints (encoding/binary's), strings as a length
// and the bytes, lists as a count and the items; and the tables' records
// (digest_table.go), of fixed size.

// digestMagic starts every digest; digestVersion is the layout's version.
// A digest of another version is not read (the dump is then scanned).
const (
	digestMagic   = "svctrace iptables digest\n"
	digestVersion = 2
)

// wireWriter appends a digest's fields to buf.
type wireWriter struct {
	buf  []byte
	text string
}

func (w *wireWriter) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *wireWriter) int(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }

func (w *wireWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *wireWriter) strs(ss []string) {
	w.uint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

// offsetIn is where part starts in whole, when part's bytes are whole's.
func offsetIn(whole, part string) (int, bool) {
	if part == "" || whole == "" {
		return 0, false
	}
	w, p := uintptr(unsafe.Pointer(unsafe.StringData(whole))), uintptr(unsafe.Pointer(unsafe.StringData(part)))
	if p < w || p-w > uintptr(len(whole)) || uintptr(len(part)) > uintptr(len(whole))-(p-w) {
		return 0, false
	}
	return int(p - w), true
}

// errDigest is a digest that cannot be read: damaged, or not this dump's.
var errDigest = errors.New("damaged digest")

// wireReader reads a digest's fields; the first failure sticks in err and
// makes every later read return zero values.
type wireReader struct {
	buf  []byte
	pos  int
	text string
	err  error
}

func (r *wireReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: byte %d: %s", errDigest, r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *wireReader) uint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *wireReader) int() int64   { return readVarint(r, binary.Varint) }

// readVarint reads a number with decode (binary.Uvarint, binary.Varint).
func readVarint[T uint64 | int64](r *wireReader, decode func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := decode(r.buf[r.pos:])
	if n <= 0 {
		r.fail("bad or truncated number")
		return 0
	}
	r.pos += n
	return v
}

// small reads a count or position that must fit in an int32 and be at
// most limit.
func (r *wireReader) small(limit int) int {
	v := r.uint()
	if v > uint64(limit) || v > 1<<31-1 {
		r.fail("value %d out of range (at most %d)", v, limit)
		return 0
	}
	return int(v)
}

// left is how many bytes are left to read.
func (r *wireReader) left() int { return len(r.buf) - r.pos }

func (r *wireReader) str() string {
	n := r.uint()
	if r.err == nil && n > uint64(r.left()) {
		r.fail("a string of %d bytes where %d are left", n, r.left())
	}
	if r.err != nil {
		return ""
	}
	s := string(r.buf[r.pos : r.pos+int(n)])
	r.pos += int(n)
	return s
}

func (r *wireReader) strs() []string {
	n := r.small(r.left())
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}
