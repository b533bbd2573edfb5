package analysis

import (
	"net/netip"
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/plugins"
	"github.com/svctrace/svctrace/snapshot"
)

// Which probes a detector takes for not local: by CIDR, the source
// address; by interface, the class, with the node's own packets (no input
// interface) not local in iptables and ipvs mode and not matched at all
// in nftables mode.
func TestLocalDetector(t *testing.T) {
	cidrs := []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}
	pod, node, ext := netip.MustParseAddr("10.244.1.9"), netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("203.0.113.9")
	for _, c := range []struct {
		cfg            snapshot.ProxyConfig
		pod, node, ext bool
	}{
		{snapshot.ProxyConfig{Mode: "iptables"}, false, true, true},
		{snapshot.ProxyConfig{Mode: "iptables", DetectLocalMode: "BridgeInterface", BridgeInterface: "cni0"}, false, true, true},
		{snapshot.ProxyConfig{Mode: "ipvs", DetectLocalMode: "InterfaceNamePrefix", InterfaceNamePrefix: "veth"}, false, true, true},
		{snapshot.ProxyConfig{Mode: "nftables", DetectLocalMode: "BridgeInterface", BridgeInterface: "cni0"}, false, false, true},
		{snapshot.ProxyConfig{Mode: "nftables"}, false, true, true},
	} {
		d := newLocalDetector(c.cfg, plugins.TraitsOf(c.cfg.Mode), cidrs)
		got := [3]bool{d.notLocal(behavior.FromPod, pod), d.notLocal(behavior.FromNode, node), d.notLocal(behavior.FromExternal, ext)}
		if want := [3]bool{c.pod, c.node, c.ext}; got != want || !d.on() {
			t.Errorf("%+v: not local (pod, node, external) %v, want %v", c.cfg, got, want)
		}
	}
	if d := newLocalDetector(snapshot.ProxyConfig{DetectLocalMode: "BridgeInterface"}, model.ProxierTraits{}, nil); d.on() {
		t.Error("a bridge detector without its bridge is on")
	}
}
