package nftables

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/internal/gctest"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestWalkerLetsGo: once an observation is done and its ruleset dropped,
// the next garbage collection frees the ruleset: nothing the walker's
// walks hand back for its next walks (walkBufs, in a sync.Pool, which
// keeps them for a second collection) holds the walker or the ruleset.
// In the node agent, a check that follows another soon would hold both
// reads at once (the iptables plane's test of the same name).
func TestWalkerLetsGo(t *testing.T) {
	gctest.FreedByOneCollection(t, "the observation's ruleset", func() *Ruleset {
		rs, err := Parse("gen", []byte(snapshottest.NFTablesJSON(60, 4)))
		if err != nil {
			t.Fatal(err)
		}
		in := dataplane.ObserveInput{Node: "n", Family: "IPv4", NoRules: true,
			NodeIPs: []netip.Addr{netip.MustParseAddr(snapshottest.Node1IP)}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
		if tab := dataplane.Observe(NewPlane(rs, "IPv4"), in); len(tab.Frontends) == 0 {
			t.Fatal("nothing observed")
		}
		return rs
	})
}
