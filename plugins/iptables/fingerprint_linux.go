//go:build linux

package iptables

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"

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
	h := sha256.New()
	for _, family := range []string{famIPv4, famIPv6} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := digestLegacy(h, xtFamilies[family]); err != nil {
			return nil, err
		}
	}
	return h.Sum(nil), nil
}

// digestLegacy writes the family's legacy tables to h, each table's name,
// layout and entries without their counters.
func digestLegacy(h hash.Hash, fam *xtFamily) error {
	k, err := xtables.Open(fam.xt)
	if err != nil {
		return fmt.Errorf("iptables: fingerprinting the legacy tables: %w", err)
	}
	defer k.Close()
	names, err := legacyTables(k, fam)
	if errors.Is(err, ErrNoLegacy) {
		fmt.Fprintf(h, "%s: none\n", fam.name)
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		blob, info, err := getEntries(k, fam, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %s %+v\n", fam.name, name, info)
		err = hashEntries(h.Write, fam, blob[xtables.EntriesHead:])
		unix.Munmap(blob)
		if err != nil {
			return fmt.Errorf("iptables: %s table %s: %w", fam.name, name, err)
		}
	}
	return nil
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
