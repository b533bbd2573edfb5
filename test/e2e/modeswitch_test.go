//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// TestModeSwitch runs the matrix's Services on the oldest kube-proxy of
// test/tools/releases.txt in iptables mode, then moves both nodes to the
// newest in nftables mode, as an operator upgrading and switching modes
// would (stop, start the other): a healthy node gives no finding before
// and after, and a repair in the new release's layout changes nothing.
// kube-proxy in nftables mode removes its service chains of iptables mode
// but keeps KUBE-FIREWALL's "block incoming localnet connections" rule,
// which iptables-nft holds in nftables beside kube-proxy's table, before
// its chains: its 127.0.0.0/8 test is no source range of the NodePorts of
// the Local-policy Service without a local endpoint on node2.
//
// A kube-proxy started on a node that already has its zone label can
// miss it: it registers its topology handler on a node informer that is
// already running (NodeManager's), after the informer may have delivered
// the node. It then spreads topology-hinted Services over every zone until
// the label changes, and drift rightly reports StaleEndpoint for them. The
// test relabels the nodes after the switch so that the check is about the
// switch, not about that race.
func TestModeSwitch(t *testing.T) {
	rs := loadReleases(t)
	oldest, newest := rs[0].version, rs[len(rs)-1].version
	c := startMatrix(t, "iptables", oldest)
	nodes := []string{"node1", "node2"}
	t.Run("iptables "+oldest, func(t *testing.T) {
		for _, n := range nodes {
			waitDrift(t, c, n, nil)
		}
	})
	for _, n := range nodes {
		if err := c.StopKubeProxy(n); err != nil {
			t.Fatal(err)
		}
	}
	c.mode, c.version = "nftables", newest
	for _, n := range nodes {
		if err := c.startProxy(n); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitSynced(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if fs, _ := c.drift(t, n); len(fs) > 0 {
			t.Logf("%s right after the switch (the zone race above when only default/zoned): %q", n, fs)
		}
	}
	c.relabelZones(t, nodes...)
	t.Run("then nftables "+c.version, func(t *testing.T) {
		for _, n := range nodes {
			out, err := c.Exec(n, "iptables-save")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "block incoming localnet connections") {
				t.Fatalf("%s: no KUBE-FIREWALL localnet rule left after the switch; the case is not what this test is about:\n%s", n, out)
			}
			waitDrift(t, c, n, nil)
		}
		nothingToRepair(t, c)
	})
}
