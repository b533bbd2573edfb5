//go:build linux

package ipvs

import (
	"context"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestApplyRefusesTamperedRules: the writer reads its iptables payload
// back right before it writes, and writes nothing at all (no ipset, no
// rule) when the payload does more than the delta's rule changes, in a
// fresh network namespace of the real kernel.
func TestApplyRefusesTamperedRules(t *testing.T) {
	ns := netnstest.New(t, "ipvsck", "ipset", "iptables-nft-restore", "iptables-nft-save")
	target := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14, RandomFully: true,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	target.Virtuals, target.Addrs = nil, nil
	ctx := context.Background()
	err := netns.Run("/run/netns/"+ns, func() error {
		cur, err := kernelState(ctx, "IPv4", "nf_tables")
		if err != nil {
			return err
		}
		d := diff(cur, target, "")
		if d.rulesPayload == "" || len(d.newSets) == 0 {
			t.Fatalf("the delta writes no rules or no sets:\n%s", d.payload("IPv4"))
		}
		d.rulesPayload = strings.Replace(d.rulesPayload, "COMMIT\n", "-A INPUT -s 203.0.113.0/24 -j ACCEPT\nCOMMIT\n", 1)
		return applyDelta(ctx, d, "IPv4", "nf_tables")
	})
	if err == nil || !strings.Contains(err.Error(), "refusing to write it") {
		t.Fatalf("error %v, want a refusal", err)
	}
	if out := netnstest.Run(t, ns, "", "ipset", "save"); strings.TrimSpace(out) != "" {
		t.Errorf("a refused write made ipsets:\n%s", out)
	}
	if out := netnstest.Run(t, ns, "", "iptables-nft-save"); strings.Contains(out, "KUBE-") || strings.Contains(out, "203.0.113.0") {
		t.Errorf("a refused write wrote rules:\n%s", out)
	}
}
