package iptables

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/gctest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestWalkerLetsGo: once an observation of a lazy read is done and the
// read dropped, the next garbage collection frees the read (its dump and
// its parsed rules). The walker's spare walks and scopes were in
// sync.Pools, which keep what was put back for a second collection, and
// through it the walker and the read: in the node agent, a check that
// followed another soon held both reads at once.
func TestWalkerLetsGo(t *testing.T) {
	gctest.FreedByOneCollection(t, "the observation's read", func() *Ruleset {
		rs, err := parseLazy("gen", snapshottest.IPTablesSave(60, 4), ParseOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		in := dataplane.ObserveInput{Node: "n", Family: "IPv4", NoRules: true,
			NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
		if tab := dataplane.Observe(&Plane{Rules: rs}, in); len(tab.Frontends) == 0 {
			t.Fatal("nothing observed")
		}
		return rs
	})
}
