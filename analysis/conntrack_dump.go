package analysis

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/svctrace/svctrace/conntrack"
	"github.com/svctrace/svctrace/snapshot"
)

// conntrackEntries parses the conntrack dumps of a node's snapshot.
func conntrackEntries(ns *snapshot.NodeState, family string) ([]conntrack.Entry, bool, error) {
	var out []conntrack.Entry
	found := false
	for _, d := range ns.Dumps {
		if d.Collector != snapshot.CollectorConntrack {
			continue
		}
		found = true
		origin := d.Origin
		if origin == "" {
			origin = fmt.Sprintf("node %s conntrack dump", ns.Name)
		}
		entries, _, err := conntrack.ParseText(origin, strings.NewReader(d.Text), 0)
		if err != nil {
			return nil, true, err
		}
		for _, e := range entries {
			if e.Family == "" || e.Family == family {
				out = append(out, e)
			}
		}
	}
	return out, found, nil
}

// FrontendAddrs are the destination addresses of the node's frontends and
// the node's own (NodePorts): what a conntrack read is filtered to.
func (a *NodeAnalysis) FrontendAddrs() []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(x netip.Addr) {
		if x.IsValid() && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, f := range a.Expected.Frontends {
		if ip, err := netip.ParseAddr(f.Key.IP); err == nil {
			add(ip)
		}
	}
	for _, ip := range a.NodeIPs {
		add(ip)
	}
	return out
}
