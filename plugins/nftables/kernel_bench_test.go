//go:build linux

package nftables

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// benchmarkReadKernel reads a node's ruleset of so many Services × 10
// endpoints, loaded into a namespace of its own, over netlink; the
// baseline, measured in the same run, is `nft -j list ruleset` of the
// same namespace (x-nft-j: the read's time over nft's).
func benchmarkReadKernel(b *testing.B, services int) {
	ns := kernelNetns(b)
	rs, err := Parse("generated", []byte(snapshottest.NFTablesJSON(services, 10)))
	if err != nil {
		b.Fatal(err)
	}
	// nft loads a rule with a handle as one to insert after it: none.
	for _, t := range rs.Tables {
		t.Handle = 0
		for _, c := range t.Chains {
			c.Handle = 0
			for _, r := range c.Rules {
				r.Handle = 0
			}
		}
		for _, s := range t.Sets {
			s.Handle = 0
		}
	}
	text, err := RenderJSON(rs)
	if err != nil {
		b.Fatal(err)
	}
	inNetns(b, ns, string(text), "nft", "-j", "-f", "-")
	start := time.Now()
	inNetns(b, ns, "", "nft", "-j", "list", "ruleset")
	nft := time.Since(start)
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// once: a read of its own (a command); repeated: the node agent's
	// next read, with the cache of the one before.
	for _, repeated := range []bool{false, true} {
		b.Run(map[bool]string{false: "once", true: "repeated"}[repeated], func(b *testing.B) {
			var cache *ElementCache
			if repeated {
				cache = NewElementCache()
				if _, err := ReadNetlinkCached(int(f.Fd()), cache); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				got, err := ReadNetlinkCached(int(f.Fd()), cache)
				if err != nil {
					b.Fatal(err)
				}
				if n := benchCountRules(got); n != benchCountRules(rs) {
					b.Fatalf("%d rules read, want %d", n, benchCountRules(rs))
				}
			}
			b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(nft), "x-nft-j")
			if repeated && cache.Reused() == 0 {
				b.Fatal("the repeated read took no set from the cache")
			}
		})
	}
}

func BenchmarkReadKernel1k(b *testing.B)  { benchmarkReadKernel(b, 1000) }
func BenchmarkReadKernel10k(b *testing.B) { benchmarkReadKernel(b, 10000) }
