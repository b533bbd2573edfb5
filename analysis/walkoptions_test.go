package analysis_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

// TestWalkOptionsNarrowOnly checks, on every bundled capture (both
// planes), that a walk narrowed to one backend or to outcomes gives
// exactly the full walk's answer for it: the same branches to that
// backend, and the same untranslated ones.
func TestWalkOptionsNarrowOnly(t *testing.T) {
	files, err := filepath.Glob("../examples/lab-*.snapshot.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled captures: %v", err)
	}
	for _, file := range files {
		s, err := snapshot.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		a, err := analysis.Analyze(s, s.Nodes[0].Name, "IPv4")
		if err != nil {
			t.Fatal(err)
		}
		w := a.Plane.Walker(&dataplane.Env{LocalAddrs: a.LocalAddrs})
		narrowed := 0
		for _, f := range a.Observed.Frontends {
			dst, err := netip.ParseAddr(f.Key.IP)
			if err != nil {
				continue // a NodePort on every address
			}
			for _, src := range []string{"10.244.0.250", "203.0.113.77"} {
				p := dataplane.Packet{Src: netip.MustParseAddr(src), Dst: dst, Protocol: strings.ToLower(f.Key.Protocol),
					SrcPort: 40000, DstPort: uint16(f.Key.Port), Entry: dataplane.Prerouting}
				full := w.Walk(p)
				bare := w.WalkWith(p, dataplane.WalkOptions{NoHops: true})
				if got, want := outcomes(bare, ""), outcomes(full, ""); !slices.Equal(got, want) {
					t.Errorf("%s: %s NoHops:\n got %q\nwant %q", file, p, got, want)
				}
				for _, b := range bare {
					if len(b.Hops) > 0 {
						t.Errorf("%s: %s NoHops: a branch has %d hops", file, p, len(b.Hops))
					}
				}
				for _, b := range full {
					if b.DNAT == "" {
						continue
					}
					ap := netip.MustParseAddrPort(b.DNAT)
					got := outcomes(w.WalkWith(p, dataplane.WalkOptions{Toward: ap}), "")
					if want := outcomes(full, b.DNAT); !slices.Equal(got, want) {
						t.Errorf("%s: %s toward %s:\n got %q\nwant %q", file, p, ap, got, want)
					}
					narrowed++
				}
			}
		}
		if narrowed == 0 {
			t.Errorf("%s: no walk was narrowed to a backend", file)
		}
	}
}

// outcomes summarises branches (hops included, by count) in order; with
// toward set, only the branches to it and the untranslated ones.
func outcomes(br []dataplane.Branch, toward string) []string {
	var out []string
	for _, b := range br {
		if toward != "" && b.DNAT != "" && b.DNAT != toward {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s dnat=%s masq=%v p=%.4f", b.Verdict, b.Reason, b.DNAT, b.Masquerade, b.Probability))
	}
	return out
}
