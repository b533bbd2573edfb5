package ipvs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The digest's raw material is the kernel's netlink attributes, kept as
// the kernel sent them but for those that traffic or time move (counters,
// rates, connection counts, a member's remaining timeout), which are left
// out by type. Leaving out what is known to move, rather than keeping
// what is known to be configuration, errs the safe way: an attribute a
// later kernel adds is in the digest, and at worst makes it change when
// nothing that matters did (the node is then read in full), never stay
// the same when the state changed.

// attrTypeMask is a netlink attribute's type without its flags
// (NLA_F_NESTED, NLA_F_NET_BYTEORDER).
const attrTypeMask = 0x3fff

// eachAttr calls fn with the type (flags masked off), the payload and the
// whole attribute (header and payload, no padding) of each attribute of
// b, in order; fn's error ends the walk.
func eachAttr(b []byte, fn func(typ uint16, payload, raw []byte) error) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return fmt.Errorf("%d bytes left, shorter than an attribute's header", len(b))
		}
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			return fmt.Errorf("an attribute of %d bytes where %d are left", n, len(b))
		}
		if err := fn(binary.NativeEndian.Uint16(b[2:])&attrTypeMask, b[4:n], b[:n]); err != nil {
			return err
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return nil
}

// withoutAttrs appends to dst the attributes of b but those whose type
// drop names, each with a 4-byte length before it.
func withoutAttrs(dst, b []byte, drop func(typ uint16) bool) ([]byte, error) {
	err := eachAttr(b, func(typ uint16, _, raw []byte) error {
		if !drop(typ) {
			dst = appendRecord(dst, raw)
		}
		return nil
	})
	return dst, err
}

// appendRecord appends rec to dst after its length, so that records
// written one after another read back one way only.
func appendRecord(dst, rec []byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst, uint32(len(rec))), rec...)
}

// sortedRecords appends recs to dst in byte order, each after its
// length: the kernel's order of them is left out.
func sortedRecords(dst []byte, recs [][]byte) []byte {
	slices.SortFunc(recs, bytes.Compare)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(recs)))
	for _, r := range recs {
		dst = appendRecord(dst, r)
	}
	return dst
}

// digester hashes the parts of the state, each named, its records
// sorted. xxHash, as the iptables plane's digest: the digest is compared
// only within one process, so it need not be a cryptographic hash, and
// at more than 10 GB/s the 10 MB of records of 10,000 Services hash in
// about a millisecond (SHA-256, 1.7 GB/s on this project's machine, took
// some 6 ms), a small part of the netlink dumps' cost
// (BenchmarkIPVSDigest10k). Its 64 bits make two states colliding
// negligible beside the full read every --full-interval.
type digester struct {
	h   *xxhash.Digest
	buf []byte
}

func newDigester() *digester { return &digester{h: xxhash.New()} }

// part writes the records of the part name, sorted.
func (d *digester) part(name string, recs [][]byte) {
	d.buf = sortedRecords(appendRecord(d.buf[:0], []byte(name)), recs)
	d.h.Write(d.buf)
}

// sum is the digest, after the prefix.
func (d *digester) sum(prefix string) []byte {
	return d.h.Sum([]byte(prefix))
}
