package iptables

import (
	"errors"
	"fmt"
	"sync"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// noLegacy is a family's digest where the kernel has no legacy tables.
var noLegacy = []byte("none")

// legacyDigests is KernelFingerprint's answer from the digests of the
// two families' tables (digestLegacy).
func legacyDigests(v4, v6 []byte) []byte {
	return fmt.Appendf(nil, "legacy %s %x\nlegacy %s %x\n", famIPv4, v4, famIPv6, v6)
}

var _ dataplane.RepeatedReader = Loader{}

// Repeated is the node agent's reader. Its reads of the legacy tables
// digest the entries they print as KernelFingerprint does
// (dataplane.ReadFingerprinter): the agent keeps a digest of each state it
// checks, and need not have the kernel copy the entries twice for it, which
// at 10,000 Services costs about half a read.
func (Loader) Repeated() dataplane.KernelReader { return &digestingReader{} }

var _ dataplane.ReadFingerprinter = (*digestingReader)(nil)

// digestingReader is a Loader whose legacy reads keep their digests, by
// family, until ReadFingerprint takes them.
type digestingReader struct {
	Loader
	mu   sync.Mutex
	sums map[string][]byte
}

func (r *digestingReader) ReadKernel(collector, backend string) (snapshot.Dump, error) {
	d, err := legacyDump(collector, backend)
	if err != nil {
		return d, err
	}
	text, sum, err := readLegacyDigest(d.Family)
	if sum != nil {
		r.mu.Lock()
		if r.sums == nil {
			r.sums = map[string][]byte{}
		}
		r.sums[d.Family] = sum
		r.mu.Unlock()
	}
	if err != nil {
		return d, err
	}
	d.Origin, d.Text = LegacySource, text
	return d, nil
}

// ReadFingerprint is KernelFingerprint of the tables the reads since its
// last call read; an error when they did not read both families'.
func (r *digestingReader) ReadFingerprint() ([]byte, error) {
	r.mu.Lock()
	sums := r.sums
	r.sums = nil
	r.mu.Unlock()
	v4, v6 := sums[famIPv4], sums[famIPv6]
	if v4 == nil || v6 == nil {
		return nil, errors.New("iptables: the legacy tables of both families were not read")
	}
	return legacyDigests(v4, v6), nil
}
