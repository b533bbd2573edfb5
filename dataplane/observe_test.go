package dataplane

import (
	"fmt"
	"testing"

	"github.com/svctrace/svctrace/behavior"
)

// TestSummarizeBackends: branches to the same endpoint add up, backends
// keep the order first reached, with few endpoints (a scan) and with many
// (a map past 32); masquerade and drops are kept.
func TestSummarizeBackends(t *testing.T) {
	for _, n := range []int{3, 31, 32, 33, 200} {
		var br []Branch
		for round := range 2 {
			for i := range n {
				br = append(br, Branch{Probability: 1 / float64(2*n), DNAT: fmt.Sprintf("10.0.%d.%d:80", i/250, i%250), Masquerade: round == 1 && i == n-1})
			}
		}
		br = append(br, Branch{Probability: 0, Verdict: Drop, Reason: "r"})
		o := summarize(br, nil)
		if o.Verdict != behavior.Forward || len(o.Backends) != n || !o.Masquerade {
			t.Fatalf("%d endpoints: %s, %d backends, masquerade %v", n, o.Verdict, len(o.Backends), o.Masquerade)
		}
		for i, b := range o.Backends {
			if want := fmt.Sprintf("10.0.%d.%d:80", i/250, i%250); b.Endpoint != want || b.Probability != round(1/float64(n)) {
				t.Fatalf("%d endpoints: backend %d is %s with %v, want %s with %v", n, i, b.Endpoint, b.Probability, want, round(1/float64(n)))
			}
		}
	}
	if o := summarize([]Branch{{Probability: 1, Verdict: Reject, Reason: "no endpoints"}}, nil); o.Verdict != behavior.Reject || o.Backends != nil || o.Reason != "no endpoints" {
		t.Errorf("rejected: %+v", o)
	}
}
