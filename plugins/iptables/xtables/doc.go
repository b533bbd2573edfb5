// Package xtables talks to the kernel's legacy packet filter (x_tables:
// the tables of iptables-legacy and ip6tables-legacy) for the reader in
// package iptables, which decodes what it hands over.
//
// It knows three things: which tables a family has in use (the kernel
// lists them in /proc/net/ip_tables_names and ip6_tables_names of the
// namespace), and the two get options of a raw socket that tell a
// table's size and hand over its entries (IPT_SO_GET_INFO and
// IPT_SO_GET_ENTRIES, their IPv6 twins sharing the numbers). The reader
// asks them through Kernel, so that package xtablestest can answer in the
// kernel's place from a recording.
package xtables

import "fmt"

// Layout of the get options' buffers (linux/netfilter/x_tables.h,
// linux/netfilter_ipv4/ip_tables.h): each starts with the table's name,
// and GET_ENTRIES' with the size of the entries after it.
const (
	// TableNameLen is the room of a table's name (XT_TABLE_MAXNAMELEN),
	// NUL included.
	TableNameLen = 32
	// InfoSize is the size of struct ipt_getinfo (and ip6t_getinfo).
	InfoSize = TableNameLen + 4 + 5*4 + 5*4 + 4 + 4
	// EntriesHead is struct ipt_get_entries up to its entry table, which
	// the counters of its entries align to 8 bytes: the name, then the
	// size of the entries (native order) at TableNameLen.
	EntriesHead = 40
)

// Option is a get option of x_tables.
type Option int

// The options the reader asks (IPT_SO_GET_INFO, IP6T_SO_GET_INFO share
// the numbers, as do the GET_ENTRIES ones).
const (
	GetInfo    Option = 64
	GetEntries Option = 65
)

func (o Option) String() string {
	switch o {
	case GetInfo:
		return "GET_INFO"
	case GetEntries:
		return "GET_ENTRIES"
	}
	return fmt.Sprintf("option %d", int(o))
}

// Family is an IP family of x_tables: its socket's address family.
type Family int

// The families (AF_INET, AF_INET6 as Linux numbers them).
const (
	IPv4 Family = 2
	IPv6 Family = 10
)

func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return fmt.Sprintf("family %d", int(f))
}

// Level is the socket level of the family's options (SOL_IP, SOL_IPV6).
func (f Family) Level() int {
	if f == IPv6 {
		return 41
	}
	return 0
}

// NamesFile is the file of /proc/net (of the namespace) that lists the
// family's tables in use; it is missing when the family's x_tables
// module is not loaded.
func (f Family) NamesFile() string {
	if f == IPv6 {
		return "ip6_tables_names"
	}
	return "ip_tables_names"
}

// Kernel is the x_tables of one family in one network namespace, as the
// reader asks them: Socket is the kernel's, xtablestest plays one back.
type Kernel interface {
	// Tables lists the family's tables in use, in the kernel's order. When
	// the kernel lists none (the family's module is not loaded) the error
	// wraps fs.ErrNotExist.
	Tables() ([]string, error)
	// Get asks a table an option: buf is both the question (the table's
	// name first, GET_ENTRIES' size after it; its length is the size
	// asked) and the answer, which fills it in place. A refusal is the
	// kernel's errno (a syscall.Errno, wrapped or not): EAGAIN when the
	// table changed since its size was asked.
	Get(opt Option, buf []byte) error
}
