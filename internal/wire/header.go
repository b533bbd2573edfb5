package wire

import (
	"fmt"
	"hash/crc32"
)

// Header starts an index: its magic, its layout's version, and the size
// and CRC-32 of the dump it is of.
func (w *Writer) Header(magic string, version uint64, dump []byte) {
	w.Buf = append(w.Buf, magic...)
	w.Uint(version)
	w.Uint(uint64(len(dump)))
	w.Uint(uint64(crc32.ChecksumIEEE(dump)))
}

// Header reads what Writer.Header wrote, from the start of Buf, and checks
// it against the index's magic and version and the dump it is read with
// (what names that kind of dump in the error). The error wraps Damaged for
// something that is not such an index or is of another dump, and
// otherVersion for an index of another version. A header cut short is left
// in Err, as any other field.
func (r *Reader) Header(magic string, version uint64, otherVersion error, dump []byte, what string) error {
	if len(r.Buf) < len(magic) || string(r.Buf[:len(magic)]) != magic {
		return fmt.Errorf("%w: it does not start as one", r.Damaged)
	}
	r.Pos = len(magic)
	if v := r.Uint(); r.Err == nil && v != version {
		return fmt.Errorf("%w (%d; this svctrace reads %d)", otherVersion, v, version)
	}
	size, sum := r.Uint(), r.Uint()
	if r.Err == nil && (size != uint64(len(dump)) || sum != uint64(crc32.ChecksumIEEE(dump))) {
		return fmt.Errorf("%w: it is of another %s (%d bytes, CRC %08x; this one has %d bytes)", r.Damaged, what, size, sum, len(dump))
	}
	return nil
}
