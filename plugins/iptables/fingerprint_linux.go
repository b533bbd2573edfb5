//go:build linux

package iptables

import (
	"context"
	"errors"
	"fmt"
	"hash"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

var _ dataplane.KernelFingerprinter = Loader{}

// KernelFingerprint is a digest of the legacy backend's tables of both
// families in the calling thread's network namespace: their names, each
// one's layout and every byte of its entries but their packet and byte
// counters, which traffic moves. Unlike the watch's poll of the tables'
// sizes it sees a rule replaced by another of the same length. It costs
// the kernel's copy of the entries and a hash, not their decoding, nor
// the printing and parsing of a read. The nf_tables backend's rules are
// the nftables plane's to fingerprint (its generation covers
// iptables-nft's changes).
func (Loader) KernelFingerprint(ctx context.Context) ([]byte, error) {
	var sums [2][]byte
	for i, family := range []string{famIPv4, famIPv6} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := digestLegacy(xtFamilies[family])
		if err != nil {
			return nil, err
		}
		sums[i] = sum
	}
	return legacyDigests(sums[0], sums[1]), nil
}

// digestLegacy is the digest of the family's legacy tables, each table's
// name, layout and entries without their counters (hashTable); noLegacy
// where the kernel has none.
func digestLegacy(fam *xtFamily) ([]byte, error) {
	k, err := xtables.Open(fam.xt)
	if err != nil {
		return nil, fmt.Errorf("iptables: fingerprinting the legacy tables: %w", err)
	}
	defer k.Close()
	names, err := legacyTables(k, fam)
	if errors.Is(err, ErrNoLegacy) {
		return noLegacy, nil
	}
	if err != nil {
		return nil, err
	}
	h := newDigest()
	for _, name := range names {
		blob, info, err := getEntries(k, fam, name)
		if err != nil {
			return nil, err
		}
		err = hashTable(h, fam, name, blob, info)
		unix.Munmap(blob)
		if err != nil {
			return nil, err
		}
	}
	return h.Sum(nil), nil
}

// newDigest is the hash of a family's tables: xxHash, whose 64 bits tell
// two states of one node apart as surely as a digest compared only within
// one process needs, at a fraction of SHA-256's cost over the hundred
// megabytes of entries of a large node (the read's time, which the agent
// pays at each period).
func newDigest() hash.Hash { return xxhash.New() }

// hashTable writes a table read by getEntries to h: its name, its layout
// and its entries without their counters.
func hashTable(h hash.Hash, fam *xtFamily, name string, blob []byte, info tableInfo) error {
	fmt.Fprintf(h, "%s %s %+v\n", fam.name, name, info)
	if err := hashEntries(h.Write, fam, blob[xtables.EntriesHead:]); err != nil {
		return fmt.Errorf("iptables: %s table %s: %w", fam.name, name, err)
	}
	return nil
}

// readLegacyDigest reads the family's tables as ReadLegacy does, and the
// digest digestLegacy would give of the entries it read (noLegacy, with
// ErrNoLegacy, where the kernel has none). When the read fails, the digest
// is one of its own, with the error.
func readLegacyDigest(family string) (string, []byte, error) {
	fam, ok := xtFamilies[family]
	if !ok {
		return "", nil, fmt.Errorf("iptables: no legacy read of family %q", family)
	}
	k, err := xtables.Open(fam.xt)
	if err != nil {
		return "", nil, fmt.Errorf("iptables: %w", err)
	}
	defer k.Close()
	h := newDigest()
	text, err := readLegacy(k, fam, h)
	if errors.Is(err, ErrNoLegacy) {
		return "", noLegacy, err
	}
	if err != nil {
		// The tool reads the family instead (a rule of an extension the
		// reader does not print, say): a digest of its own, taken before
		// the tool reads, vouches for what it reads as KernelFingerprint's
		// would.
		sum, derr := digestLegacy(fam)
		if derr != nil {
			return "", nil, err
		}
		return "", sum, err
	}
	return text, h.Sum(nil), nil
}

// hashEntries writes the entries to w, each without its counters.
func hashEntries(w func([]byte) (int, error), fam *xtFamily, entries []byte) error {
	for off := 0; off < len(entries); {
		e := entries[off:]
		if len(e) < fam.entrySize {
			return fmt.Errorf("an entry at offset %d is cut short (%d bytes left)", off, len(e))
		}
		next := int(ne.Uint16(e[fam.nextOffset:]))
		if next < fam.entrySize || next > len(e) {
			return fmt.Errorf("the entry at offset %d says the next is %d bytes on", off, next)
		}
		w(e[:fam.counters])
		w(e[fam.counters+16 : next])
		off += next
	}
	return nil
}
