// Package plugins is where svctrace's data planes are registered. Each
// plane lives in its own package below (iptables, nftables, …) and owns
// everything about its kernel state: which dumps it reads, how it parses
// and walks them, its text-level checks and what it infers. Code outside
// plugins/ knows a plane only through dataplane's contract; a test keeps it
// so. Every package under plugins/ is a plane; the connection table
// (package conntrack) is none, and analysis and repair use it directly.
package plugins

import (
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins/iptables"
	"github.com/svctrace/svctrace/plugins/ipvs"
	"github.com/svctrace/svctrace/plugins/nftables"
)

// Loaders are the data planes svctrace reads, in the order they are
// preferred when kube-proxy's mode is not known and several hold its
// objects (nftables first: kube-proxy in nftables mode is the newer and
// leaves iptables alone; ipvs before iptables, since ipvs mode writes
// iptables rules too). A new plane adds one line here.
func Loaders() []dataplane.Loader {
	return []dataplane.Loader{
		nftables.Loader{},
		ipvs.Loader{},
		iptables.Loader{},
	}
}

// ForMode is the plane of kube-proxy's mode, nil for a mode none serves.
func ForMode(mode string) dataplane.Loader {
	for _, l := range Loaders() {
		if l.Mode() == mode {
			return l
		}
	}
	return nil
}

// TraitsOf are the ways the proxier of kube-proxy's mode departs from
// the common behaviour, as its plane declares them; a mode no plane
// serves (or "") has none.
func TraitsOf(mode string) model.ProxierTraits {
	if d, ok := ForMode(mode).(dataplane.Declarer); ok {
		return d.Traits()
	}
	return model.ProxierTraits{Mode: mode}
}
