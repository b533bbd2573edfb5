//go:build linux

package ipvs

import (
	"context"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
)

// TestWriteSetsAddrsRules writes the render's ipsets, kube-ipvs0 addresses
// and iptables rules into a fresh network namespace of the real kernel
// (the host's has no IPVS: the VM lab writes virtual servers), reads them
// back as a repair does, and finds nothing left to change; a member, an
// address and a rule taken away by hand are put back, and a stale member
// and address are removed, leaving another component's set alone.
func TestWriteSetsAddrsRules(t *testing.T) {
	ns := netnstest.New(t, "ipvsw", "ipset", "iptables-nft-restore", "iptables-nft-save")
	path := "/run/netns/" + ns
	// The host's kernel has no -m ipvs either: the node is in the load
	// balancer's source ranges, so no rule drops its connections by it.
	view := testView()
	view.Ports[1].LoadBalancerSourceRanges = append(view.Ports[1].LoadBalancerSourceRanges, "192.0.2.0/24")
	target := Render(view, RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14, RandomFully: true,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	target.Virtuals = nil
	ctx := context.Background()
	in := func(fn func() error) {
		t.Helper()
		if err := netns.Run(path, fn); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		t.Helper()
		var out []string
		in(func() error {
			cur, err := kernelState(ctx, "IPv4", "nf_tables")
			if err != nil {
				return err
			}
			for _, c := range diff(cur, target, "").changes(target) {
				out = append(out, c.Op+" "+c.Table+" "+c.Object+" +"+strings.Join(c.Add, "|")+" -"+strings.Join(c.Remove, "|"))
			}
			return nil
		})
		return out
	}
	write := func() {
		t.Helper()
		in(func() error {
			cur, err := kernelState(ctx, "IPv4", "nf_tables")
			if err != nil {
				return err
			}
			return applyDelta(ctx, diff(cur, target, ""), "IPv4", "nf_tables")
		})
	}
	if len(left()) == 0 {
		t.Fatal("a fresh namespace already holds the render")
	}
	// The host's kernel has no dummy interfaces (the VM lab's has, and
	// there the repair makes kube-ipvs0): a bridge holds its addresses.
	netnstest.Run(t, ns, "", "ip", "link", "add", Dummy, "type", "bridge")
	netnstest.Run(t, ns, "", "ipset", "create", "OTHER", "hash:ip")
	netnstest.Run(t, ns, "", "ipset", "add", "OTHER", "192.0.2.99")
	write()
	if l := left(); len(l) > 0 {
		t.Fatalf("after the write, still to change:\n%s", strings.Join(l, "\n"))
	}
	saved := netnstest.Run(t, ns, "", "ipset", "save")
	for _, want := range []string{"add KUBE-CLUSTER-IP 10.96.0.10,tcp:80", "add KUBE-NODE-PORT-TCP 30080", "add KUBE-LOOP-BACK 192.0.2.10,tcp:8080,192.0.2.10",
		"add KUBE-LOAD-BALANCER-SOURCE-CIDR 198.51.100.5,tcp:80,203.0.113.0/24", "add KUBE-IPVS-IPS 10.96.0.10", "add OTHER 192.0.2.99",
		"add KUBE-LOAD-BALANCER-SOURCE-IP 198.51.100.5,tcp:80,198.51.100.5"} {
		if !strings.Contains(saved, want) {
			t.Errorf("ipset save lacks %q:\n%s", want, saved)
		}
	}
	if out := netnstest.Run(t, ns, "", "ip", "-o", "addr", "show", "dev", Dummy); !strings.Contains(out, "10.96.0.10/32") || !strings.Contains(out, "198.51.100.5/32") {
		t.Errorf("%s:\n%s", Dummy, out)
	}
	netnstest.Run(t, ns, "", "sh", "-c", "ipset del KUBE-CLUSTER-IP 10.96.0.10,tcp:80 && ipset add KUBE-CLUSTER-IP 10.96.9.9,tcp:80 && "+
		"ip addr del 10.96.0.10/32 dev kube-ipvs0 && ip addr add 10.96.9.9/32 dev kube-ipvs0 && "+
		"iptables-nft -t nat -D KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT")
	l := strings.Join(left(), "\n")
	for _, want := range []string{"edit ipset KUBE-CLUSTER-IP +10.96.0.10,tcp:80 -10.96.9.9,tcp:80", "edit kube-ipvs0 addresses +10.96.0.10/32 -10.96.9.9/32", "rewrite nat KUBE-SERVICES"} {
		if !strings.Contains(l, want) {
			t.Errorf("the plan lacks %q:\n%s", want, l)
		}
	}
	write()
	if l := left(); len(l) > 0 {
		t.Fatalf("after the second write, still to change:\n%s", strings.Join(l, "\n"))
	}
	if saved := netnstest.Run(t, ns, "", "ipset", "list", "OTHER"); !strings.Contains(saved, "192.0.2.99") {
		t.Errorf("another component's set changed:\n%s", saved)
	}
}
