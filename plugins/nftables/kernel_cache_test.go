//go:build linux

package nftables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadKernelCached: reads with a cache answer as reads without one
// while the ruleset changes in every way that touches a kept set: the
// rules holding them replaced, a chain they name renamed or made again
// under its name, their table made again with the same sets; and only the
// sets that cannot have changed are taken from the cache.
func TestReadKernelCached(t *testing.T) {
	ns := kernelNetns(t)
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := `table ip t {
	set named {
		type ipv4_addr
		elements = { 10.0.0.9 }
	}
	chain a {
		counter
	}
	chain b {
		counter
	}
	chain svc {
		numgen random mod 2 vmap { 0 : goto a, 1 : goto b }
	}
	chain c {
		ip daddr { 10.0.0.1, 10.0.0.2 } jump svc
		ip daddr . tcp dport { 10.0.0.3 . 80, 10.0.0.4 . 443 } accept
		ip daddr @named drop
	}
}
`
	inNetns(t, ns, table, "nft", "-f", "-")
	cache := NewElementCache()
	// check reads with the cache and without, and wants the same ruleset
	// and reused sets from the cache.
	check := func(step string, reused int) {
		t.Helper()
		got, err := ReadNetlinkCached(int(f.Fd()), cache)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want, err := ReadNetlink(int(f.Fd()))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		g, err := RenderJSON(got)
		if err != nil {
			t.Fatal(err)
		}
		w, err := RenderJSON(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(g) != string(w) {
			t.Errorf("%s: read with the cache:\n%s\nwithout:\n%s", step, g, w)
		}
		if n := cache.Reused(); n != reused {
			t.Errorf("%s: %d sets taken from the cache, want %d", step, n, reused)
		}
	}
	check("first read", 0)
	check("again", 3) // the three anonymous sets, not the named one
	inNetns(t, ns, "", "nft", "add", "element", "ip", "t", "named", "{ 10.0.0.10 }")
	check("a named set changed", 3)

	inNetns(t, ns, "", "nft", "rename", "chain", "ip", "t", "a", "z")
	check("a chain its vmap names renamed", 2)
	check("again after the rename", 3)
	inNetns(t, ns, "", "nft", "rename", "chain", "ip", "t", "z", "a2")
	inNetns(t, ns, "", "nft", "add", "chain", "ip", "t", "z")
	check("another chain made under the name", 2)

	// The vmap's rule replaced: its set has a new handle, perhaps the old
	// name.
	inNetns(t, ns, "", "nft", "flush", "chain", "ip", "t", "svc")
	inNetns(t, ns, "", "nft", "add", "rule", "ip", "t", "svc", "numgen", "random", "mod", "2", "vmap", "{ 0 : goto b, 1 : goto z }")
	check("the vmap's rule replaced", 2)
	check("again", 3)

	// The table made again with another address in a set: the same
	// handles in a table of a new handle.
	inNetns(t, ns, "", "nft", "delete", "table", "ip", "t")
	inNetns(t, ns, strings.Replace(table, "10.0.0.2 }", "10.0.0.5 }", 1), "nft", "-f", "-")
	check("the table made again", 0)
	check("again", 3)

	inNetns(t, ns, "", "nft", "delete", "table", "ip", "t")
	check("no table", 0)
}

// TestCacheableSets: only bound anonymous sets whose elements have no
// timeout, expiry or expression are kept.
func TestCacheableSets(t *testing.T) {
	const anon = 0x1 | 0x2 // NFT_SET_ANONYMOUS | NFT_SET_CONSTANT
	for _, c := range []struct {
		name string
		set  kSet
		want bool
	}{
		{"anonymous", kSet{flags: anon, elems: []kElem{{key: []byte{1}}}}, true},
		{"anonymous interval map", kSet{flags: anon | 0x4 | 0x8, elems: []kElem{{key: []byte{1}, verdict: &kVerdict{code: -3, chain: "a"}}}}, true},
		{"named", kSet{flags: 0, elems: []kElem{{key: []byte{1}}}}, false},
		{"named constant", kSet{flags: 0x2}, false},
		{"anonymous, not constant", kSet{flags: 0x1}, false},
		{"with timeouts", kSet{flags: anon | 0x10}, false},
		{"updated from the packet path", kSet{flags: anon | 0x20}, false},
		{"element with a counter", kSet{flags: anon, elems: []kElem{{key: []byte{1}, exprs: 1}}}, false},
		{"element expiring", kSet{flags: anon, elems: []kElem{{key: []byte{1}, expiresMS: 5}}}, false},
		{"element with a timeout", kSet{flags: anon, elems: []kElem{{key: []byte{1}, timeoutMS: 5}}}, false},
	} {
		if got := cacheable(&c.set); got != c.want {
			t.Errorf("%s: cacheable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOwnElems: the kept elements hold copies of the bytes they were read
// from, so the read's messages may go.
func TestOwnElems(t *testing.T) {
	key, data := []byte{10, 0, 0, 1}, []byte{0, 80}
	in := []kElem{{key: key, data: data, verdict: &kVerdict{code: -4, chain: "x"}}, {key: key[:2]}}
	out := ownElems(in)
	key[0], data[1] = 99, 99
	in[0].verdict.chain = "changed"
	if out[0].key[0] != 10 || out[0].data[1] != 80 || out[0].verdict.chain != "x" || len(out[1].key) != 2 || out[1].data != nil {
		t.Errorf("kept elements follow the read's bytes: %+v", out)
	}
	out[1].key = append(out[1].key, 7)
	if out[0].data[0] != 0 {
		t.Errorf("appending to one kept value writes into another")
	}
}
