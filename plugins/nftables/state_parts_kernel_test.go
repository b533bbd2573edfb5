//go:build linux

package nftables

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/svctrace/svctrace/dataplane"
)

// TestKernelStateParts: a state read over netlink as the node agent reads
// it (with an ElementCache, the anonymous maps inline in their rules)
// divides so that a change kube-proxy makes to one Service's chain
// changes that chain's part alone (the same rules written again too: their
// handles are new, which a walk's notes name), and a change to a map every
// walk reads changes the shared digest. The ruleset is real kube-proxy's (v1.36.3, nftables mode).
func TestKernelStateParts(t *testing.T) {
	ns := kernelNetns(t)
	dump, err := os.ReadFile("../../testdata/kube-proxy-v1.36.3/two-nodes/node2.nft.txt")
	if err != nil {
		t.Fatal(err)
	}
	inNetns(t, ns, string(dump), "nft", "-f", "-")
	cache := NewElementCache()
	read := func() (*Plane, dataplane.StateParts) {
		t.Helper()
		rs, err := readKernelIn(t, ns, cache)
		if err != nil {
			t.Fatal(err)
		}
		p := NewPlane(rs, "IPv4")
		parts, ok := p.StateParts(node2Env())
		if !ok {
			t.Fatal("a state read in full over netlink is not divided")
		}
		return p, parts
	}
	const (
		chain = "service-242WI43H-shop/cart/tcp/http"
		ep1   = "endpoint-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080"
		ep2   = "endpoint-IILHGPM4-shop/cart/tcp/http__10.244.1.21/8080"
	)
	// rewrite replaces the chain's rules in one transaction, as
	// kube-proxy does, the last one picking among endpoints.
	rewrite := func(pick string) {
		t.Helper()
		inNetns(t, ns, "flush chain ip kube-proxy "+chain+"\n"+
			"add rule ip kube-proxy "+chain+" ip saddr @affinity-GFS4UHVN-shop/cart/tcp/http__10.244.0.20/8080 goto "+ep1+"\n"+
			"add rule ip kube-proxy "+chain+" ip saddr @affinity-IILHGPM4-shop/cart/tcp/http__10.244.1.21/8080 goto "+ep2+"\n"+
			"add rule ip kube-proxy "+chain+" "+pick+"\n", "nft", "-f", "-")
	}

	p, first := read()
	id := partID(p.kp, chain)
	if _, ok := first.Parts[id]; !ok {
		t.Fatalf("%s is not a part of its own", chain)
	}
	// A packet to cart's ClusterIP from a Pod reads the Service's chain
	// and its endpoints' chains.
	sc, done := p.Walker(node2Env()).(dataplane.ScopedWalker).Scope()
	sc.Walk(pkt("10.244.1.5", "10.96.40.90", "tcp", 80))
	done()
	reads := sc.(dataplane.ScopeReads).AppendReads(nil)
	for _, c := range []string{chain, ep1, ep2} {
		if !slices.Contains(reads, partID(p.kp, c)) {
			t.Errorf("the walk to cart's ClusterIP does not tell that it read %s", c)
		}
	}

	_, again := read()
	if again.Shared != first.Shared || !maps.Equal(again.Parts, first.Parts) {
		t.Fatal("nothing changed, and the parts moved")
	}

	// onlyMoved fails unless the chain's part alone moved from was to now.
	onlyMoved := func(what string, was, now dataplane.StateParts) {
		t.Helper()
		if now.Parts[id] == was.Parts[id] {
			t.Errorf("%s: %s's part is as it was", what, chain)
		}
		for k, v := range was.Parts {
			if k != id && now.Parts[k] != v {
				t.Errorf("%s: another part (%x) moved", what, k)
			}
		}
		if len(now.Parts) != len(was.Parts) || now.Shared != was.Shared {
			t.Errorf("%s: the shared digest or the number of parts moved", what)
		}
	}
	rewrite("numgen random mod 2 vmap { 0 : goto " + ep1 + ", 1 : goto " + ep2 + " }")
	_, same := read()
	onlyMoved("the same rules written again", first, same)

	rewrite("numgen random mod 1 vmap { 0 : goto " + ep1 + " }")
	_, fewer := read()
	if cache.Reused() == 0 {
		t.Error("the read took no anonymous map from the cache: the agent's read is not the one tested")
	}
	onlyMoved("an endpoint taken out of the Service's map", same, fewer)

	inNetns(t, ns, "delete element ip kube-proxy service-ips { 10.96.94.233 . tcp . 80 }\n", "nft", "-f", "-")
	if _, out := read(); out.Shared == fewer.Shared {
		t.Error("an element taken out of service-ips left the shared digest as it was")
	}
}
