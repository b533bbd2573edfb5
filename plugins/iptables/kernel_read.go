//go:build linux

package iptables

import (
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

// readAttempts is how many times a table that changes while it is read
// is read again.
const readAttempts = 5

// ReadLegacy reads the tables of the legacy (x_tables) backend of one IP
// family ("IPv4" or "IPv6") as iptables-legacy-save prints them, from the
// kernel itself rather than through the tool: it asks for each table's
// entries over a raw socket (package xtables) and prints them (see
// kernel_table.go). It reads the calling thread's network namespace
// (internal/netns.Run reads another).
//
// Anything it does not print as iptables-save would (a match or target
// it does not know, a revision it does not read) is an error that wraps
// ErrNotTranslated: the caller runs iptables-legacy-save then. Without
// the legacy backend in the kernel (no ip_tables module loaded) the error
// wraps ErrNoLegacy.
func ReadLegacy(family string) (string, error) {
	fam, ok := xtFamilies[family]
	if !ok {
		return "", fmt.Errorf("iptables: no legacy read of family %q", family)
	}
	k, err := xtables.Open(fam.xt)
	if err != nil {
		return "", fmt.Errorf("iptables: %w", err)
	}
	defer k.Close()
	return readLegacy(k, fam, nil)
}

// ErrNoLegacy is the error of a legacy read where the kernel has no legacy
// tables in use.
var ErrNoLegacy = errors.New("the legacy backend is not in use in this kernel")

// readLegacy prints every table of the family that k has, in the order
// the kernel lists them, as iptables-legacy-save does. With h, it writes
// each table to h as the family's digest does (hashTable), from the
// entries it prints.
func readLegacy(k xtables.Kernel, fam *xtFamily, h hash.Hash) (string, error) {
	names, err := legacyTables(k, fam)
	if err != nil {
		return "", err
	}
	// The text of a large node is tens of megabytes, and a check keeps it
	// to its end: it is made of its pieces at its exact size, where a
	// builder that grows would keep up to twice its length.
	var parts []string
	now := time.Now().Format("Mon Jan _2 15:04:05 2006")
	for _, name := range names {
		blob, info, err := getEntries(k, fam, name)
		if err != nil {
			return "", err
		}
		if h != nil {
			if err := hashTable(h, fam, name, blob, info); err != nil {
				unix.Munmap(blob)
				return "", err
			}
		}
		parts = append(parts, fmt.Sprintf("# Read by svctrace from the kernel's legacy %s tables on %s\n", fam.name, now))
		// The entries printed are given back as the rest is printed: the
		// text and the entries are not both whole in memory at once.
		table, err := printTable(fam, name, blob[xtables.EntriesHead:], info, func(lo, hi uint32) {
			release(blob, xtables.EntriesHead+int(lo), xtables.EntriesHead+int(hi))
		})
		unix.Munmap(blob)
		if err != nil {
			return "", fmt.Errorf("iptables: %s table %s: %w", fam.name, name, err)
		}
		parts = append(parts, table...)
		parts = append(parts, "# Completed on "+now+"\n")
	}
	// Join sizes its text to the pieces' length.
	return strings.Join(parts, ""), nil
}

// release gives back the whole pages of the mapping m within [lo, hi):
// their entries are printed. The mapping starts on a page.
func release(m []byte, lo, hi int) {
	page := os.Getpagesize()
	lo = (lo + page - 1) &^ (page - 1)
	hi &^= page - 1
	if hi > lo {
		// Only a hint: pages it leaves are unmapped with the rest.
		_ = unix.Madvise(m[lo:hi], unix.MADV_DONTNEED)
	}
}

// legacyTables lists the family's tables in use, as the kernel tells.
func legacyTables(k xtables.Kernel, fam *xtFamily) ([]string, error) {
	names, err := k.Tables()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("iptables: %s: %w", fam.name, ErrNoLegacy)
	}
	if err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	return names, nil
}

// getEntries reads a table's entries into memory mapped for them (the
// caller unmaps it; the entries start at xtables.EntriesHead): a large
// table's entries are a hundred megabytes or more, which the kernel writes once
// and the reader reads once, so they are neither cleared first nor left
// to the garbage collector. The table may change between asking its size
// and its entries (the kernel then refuses the second with EAGAIN): it
// asks again, a few times.
func getEntries(k xtables.Kernel, fam *xtFamily, name string) ([]byte, tableInfo, error) {
	var info tableInfo
	if len(name) >= xtables.TableNameLen {
		return nil, info, fmt.Errorf("iptables: table name %q is too long", name)
	}
	for range readAttempts {
		ib := make([]byte, xtables.InfoSize)
		copy(ib, name)
		if err := k.Get(xtables.GetInfo, ib); err != nil {
			return nil, info, fmt.Errorf("iptables: %s table %s: asking its size: %w", fam.name, name, err)
		}
		info = tableInfo{validHooks: ne.Uint32(ib[32:])}
		for h := range 5 {
			info.hookEntry[h] = ne.Uint32(ib[36+4*h:])
			info.underflow[h] = ne.Uint32(ib[56+4*h:])
		}
		info.entries, info.size = ne.Uint32(ib[76:]), ne.Uint32(ib[80:])
		eb, err := unix.Mmap(-1, 0, xtables.EntriesHead+int(info.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return nil, info, fmt.Errorf("iptables: %s table %s: %d bytes for its entries: %w", fam.name, name, info.size, err)
		}
		copy(eb, name)
		ne.PutUint32(eb[32:], info.size)
		err = k.Get(xtables.GetEntries, eb)
		if err == nil {
			return eb, info, nil
		}
		unix.Munmap(eb)
		if !errors.Is(err, unix.EAGAIN) {
			return nil, info, fmt.Errorf("iptables: %s table %s: reading its entries: %w", fam.name, name, err)
		}
	}
	return nil, info, fmt.Errorf("iptables: %s table %s changed during each of %d reads", fam.name, name, readAttempts)
}
