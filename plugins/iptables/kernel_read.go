//go:build linux

package iptables

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The x_tables get options (linux/netfilter_ipv4/ip_tables.h and its IPv6
// twin share the numbers), and the sizes of their requests.
const (
	soGetInfo    = 64 // IPT_SO_GET_INFO, IP6T_SO_GET_INFO
	soGetEntries = 65 // IPT_SO_GET_ENTRIES, IP6T_SO_GET_ENTRIES
	tableNameLen = 32 // XT_TABLE_MAXNAMELEN
	getInfoSize  = tableNameLen + 4 + 5*4 + 5*4 + 4 + 4
	// getEntriesHead is struct ipt_get_entries up to its entry table,
	// which the counters of its entries align to 8 bytes.
	getEntriesHead = 40
	readAttempts   = 5
)

// ReadLegacy reads the tables of the legacy (x_tables) backend of one IP
// family ("IPv4" or "IPv6") as iptables-legacy-save prints them, from the
// kernel itself rather than through the tool: it asks for each table's
// entries over a raw socket and prints them (see kernel_table.go). It
// reads the calling thread's network namespace (internal/netns.Run reads
// another).
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
	return readLegacy(fam)
}

// ErrNoLegacy is the error of a legacy read where the kernel has no legacy
// tables in use.
var ErrNoLegacy = errors.New("the legacy backend is not in use in this kernel")

// readLegacy prints every table of the family in the thread's namespace,
// in the order the kernel lists them, as iptables-legacy-save does.
func readLegacy(fam *xtFamily) (string, error) {
	names, err := legacyTables(fam)
	if err != nil {
		return "", err
	}
	fd, err := unix.Socket(fam.af, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return "", fmt.Errorf("iptables: opening a raw socket: %w", err)
	}
	defer unix.Close(fd)
	// A strings.Builder hands over its bytes without a copy: the text of a
	// large node is tens of megabytes.
	var out strings.Builder
	out.Grow(1 << 16)
	now := time.Now().Format("Mon Jan _2 15:04:05 2006")
	for _, name := range names {
		blob, info, err := getEntries(fd, fam, name)
		if err != nil {
			return "", err
		}
		// The text is about a quarter of the entries' size, a little more
		// for kube-proxy's: room for it at once, not twice over as it grows.
		out.Grow(len(blob) / 3)
		fmt.Fprintf(&out, "# Read by svctrace from the kernel's legacy %s tables on %s\n", fam.name, now)
		// The entries printed are given back as the rest is printed: the
		// text and the entries are not both whole in memory at once.
		err = printTable(&out, fam, name, blob[getEntriesHead:], info, func(lo, hi uint32) {
			release(blob, getEntriesHead+int(lo), getEntriesHead+int(hi))
		})
		unix.Munmap(blob)
		if err != nil {
			return "", fmt.Errorf("iptables: %s table %s: %w", fam.name, name, err)
		}
		fmt.Fprintf(&out, "# Completed on %s\n", now)
	}
	return out.String(), nil
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
func legacyTables(fam *xtFamily) ([]string, error) {
	f, err := os.Open("/proc/thread-self/net/" + fam.procNames)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("iptables: %s: %w", fam.name, ErrNoLegacy)
	}
	if err != nil {
		return nil, fmt.Errorf("iptables: listing the legacy tables: %w", err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); n != "" {
			names = append(names, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("iptables: listing the legacy tables: %w", err)
	}
	return names, nil
}

// getEntries reads a table's entries into memory mapped for them (the
// caller unmaps it; the entries start at getEntriesHead): a large table's
// entries are a hundred megabytes or more, which the kernel writes once
// and the reader reads once, so they are neither cleared first nor left
// to the garbage collector. The table may change between asking its size
// and its entries (the kernel then refuses the second with EAGAIN): it
// asks again, a few times.
func getEntries(fd int, fam *xtFamily, name string) ([]byte, tableInfo, error) {
	var info tableInfo
	if len(name) >= tableNameLen {
		return nil, info, fmt.Errorf("iptables: table name %q is too long", name)
	}
	for range readAttempts {
		ib := make([]byte, getInfoSize)
		copy(ib, name)
		if err := getsockopt(fd, fam.level, soGetInfo, ib); err != nil {
			return nil, info, fmt.Errorf("iptables: %s table %s: asking its size: %w", fam.name, name, err)
		}
		info = tableInfo{validHooks: ne.Uint32(ib[32:])}
		for h := range 5 {
			info.hookEntry[h] = ne.Uint32(ib[36+4*h:])
			info.underflow[h] = ne.Uint32(ib[56+4*h:])
		}
		info.entries, info.size = ne.Uint32(ib[76:]), ne.Uint32(ib[80:])
		eb, err := unix.Mmap(-1, 0, getEntriesHead+int(info.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return nil, info, fmt.Errorf("iptables: %s table %s: %d bytes for its entries: %w", fam.name, name, info.size, err)
		}
		copy(eb, name)
		ne.PutUint32(eb[32:], info.size)
		err = getsockopt(fd, fam.level, soGetEntries, eb)
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

// getsockopt asks an x_tables option, with buf both the question and the
// answer.
func getsockopt(fd, level, opt int, buf []byte) error {
	n := uint32(len(buf))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
