//go:build linux

package conntrack

import (
	"fmt"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
)

// KernelError is an error the kernel answered a request with; it unwraps
// to the errno (unix.ENOENT, unix.EEXIST, ...).
type KernelError = ctnetlink.KernelError

// table is a conntrack table reached over the ctnetlink connections open
// makes: the kernel's (kernelTable), or in tests a recording of it.
type table struct {
	open func() (ctnetlink.Transport, error)
}

// kernelTable is the table of the calling thread's network namespace.
func kernelTable() table { return table{open: ctnetlink.Open} }

// conn opens a connection to the table.
func (tb table) conn() (*ctnetlink.Conn, error) {
	t, err := tb.open()
	if err != nil {
		return nil, fmt.Errorf("ctnetlink: %w", err)
	}
	return ctnetlink.NewConn(t), nil
}
