package kernelrec

import (
	"bytes"
	"encoding/binary"
)

// Offsets in a netlink message header (struct nlmsghdr): length, type,
// flags, sequence number, port ID.
const (
	nlSeq    = 8
	nlPID    = 12
	nlHeader = 16
)

// SameNetlink says whether two netlink requests are the same request:
// equal but for the sequence number and port ID, which differ from run
// to run. It compares every message of a datagram.
func SameNetlink(recorded, got []byte) bool {
	if len(recorded) != len(got) {
		return false
	}
	a, b := bytes.Clone(recorded), bytes.Clone(got)
	zeroIDs(a)
	zeroIDs(b)
	return bytes.Equal(a, b)
}

// zeroIDs clears the sequence number and port ID of each message.
func zeroIDs(b []byte) {
	for len(b) >= nlHeader {
		n := int(binary.NativeEndian.Uint32(b))
		clear(b[nlSeq:nlHeader])
		n = (n + 3) &^ 3
		if n < nlHeader || n > len(b) {
			return
		}
		b = b[n:]
	}
}

// Renumber rewrites the sequence number and port ID of every message in
// a recorded reply datagram to the ones of the request being answered,
// so that the reader takes the recorded reply as the answer to its own
// request. It returns a copy.
func Renumber(reply []byte, seq, pid uint32) []byte {
	out := bytes.Clone(reply)
	b := out
	for len(b) >= nlHeader {
		n := int(binary.NativeEndian.Uint32(b))
		binary.NativeEndian.PutUint32(b[nlSeq:], seq)
		binary.NativeEndian.PutUint32(b[nlPID:], pid)
		n = (n + 3) &^ 3
		if n < nlHeader || n > len(b) {
			break
		}
		b = b[n:]
	}
	return out
}

// Header returns the sequence number and port ID of a netlink message.
func Header(msg []byte) (seq, pid uint32) {
	if len(msg) < nlHeader {
		return 0, 0
	}
	return binary.NativeEndian.Uint32(msg[nlSeq:]), binary.NativeEndian.Uint32(msg[nlPID:])
}
