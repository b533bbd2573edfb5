//go:build linux

package xtables

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is the kernel's x_tables of a family in the network namespace
// of the thread that opened it: a raw socket to ask, and the list of
// tables read when it opened.
type Socket struct {
	fam    Family
	fd     int
	tables []string
	err    error
}

var _ Kernel = (*Socket)(nil)

// Open lists the family's tables in the calling thread's network
// namespace, then opens a raw socket there (which needs CAP_NET_RAW, and
// CAP_NET_ADMIN to ask). A kernel without the family's tables is no error
// here: Tables says so. Close the socket when done.
func Open(fam Family) (*Socket, error) {
	s := &Socket{fam: fam, fd: -1}
	s.tables, s.err = listTables(fam)
	if s.err != nil {
		return s, nil
	}
	fd, err := unix.Socket(int(fam), unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("opening a raw %v socket: %w", fam, err)
	}
	s.fd = fd
	return s, nil
}

// Close closes the socket.
func (s *Socket) Close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// Tables returns the tables listed when the socket opened.
func (s *Socket) Tables() ([]string, error) {
	return s.tables, s.err
}

// Get asks the option with buf both the question and the answer, in
// place: the entries of a large table are a hundred megabytes, which the
// kernel writes once into the caller's buffer.
func (s *Socket) Get(opt Option, buf []byte) error {
	if s.fd < 0 {
		return fmt.Errorf("%v: the socket is not open", opt)
	}
	if len(buf) == 0 {
		return fmt.Errorf("%v: an empty buffer", opt)
	}
	n := uint32(len(buf))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), uintptr(s.fam.Level()), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// listTables reads the thread's namespace's list of the family's tables.
func listTables(fam Family) ([]string, error) {
	f, err := os.Open("/proc/thread-self/net/" + fam.NamesFile())
	if err != nil {
		return nil, fmt.Errorf("listing the %v tables: %w", fam, err)
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
		return nil, fmt.Errorf("listing the %v tables: %w", fam, err)
	}
	return names, nil
}
