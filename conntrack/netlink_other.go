//go:build !linux

package conntrack

import (
	"context"
	"errors"
)

// errNotLinux answers the netlink functions outside Linux: conntrack is a
// Linux table. Imported dumps (conntrack -L, /proc/net/nf_conntrack) are
// read on every platform.
var errNotLinux = errors.New("the conntrack table is read and changed over netlink, which only Linux has: on another system, import a dump of it (collect --conntrack FILE)")

// Dump fails outside Linux.
func Dump(context.Context, Filter, func(Entry) error) (DumpStats, error) {
	return DumpStats{}, errNotLinux
}

// Create fails outside Linux.
func Create(context.Context, Entry) error { return errNotLinux }

// Delete fails outside Linux.
func Delete(context.Context, Entry) (bool, error) { return false, errNotLinux }

// Count fails outside Linux.
func Count(context.Context) (int, error) { return 0, errNotLinux }
