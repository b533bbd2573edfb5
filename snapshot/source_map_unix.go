//go:build unix

package snapshot

import (
	"os"
	"syscall"
	"unsafe"
)

// mappedSource is a binary snapshot mapped into memory, read-only: a load
// copies none of it, and only the pages it reads are read from the file
// (a partial load of a large node reads a few of its tens of megabytes of
// dump text). The mapping is never undone: the dumps' texts and indexes a
// load returns are the mapping itself, and nothing tells when the last of
// them is gone. svctrace replaces a snapshot by renaming a new file over
// it (Save), which leaves a mapped file whole.
type mappedSource []byte

// mapFile maps f, of the given size; false when the file cannot be mapped
// (then it is read piece by piece).
func mapFile(f *os.File, size int64) (source, bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	return mappedSource(b), true
}

func (m mappedSource) size() uint64 { return uint64(len(m)) }

func (m mappedSource) text(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (m mappedSource) own(b []byte) []byte { return b }

func (m mappedSource) at(off, n uint64, what string) ([]byte, error) {
	return memSource(m).at(off, n, what)
}
