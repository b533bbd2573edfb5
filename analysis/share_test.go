package analysis

import (
	"testing"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// TestObservedClassesShareBackends: in every mode, a frontend's source
// classes that reach the same backends alike share one list in the
// observed table (a node of many endpoints holds them once, not three
// times), and the node's and the external sources' lists of the lab's
// Services are equal.
func TestObservedClassesShareBackends(t *testing.T) {
	for _, file := range []string{"lab-iptables-v1.36.3", "lab-nftables-v1.36.3", "lab-ipvs-v1.36.3"} {
		s, err := snapshot.Load("../examples/" + file + ".snapshot.yaml")
		if err != nil {
			t.Fatal(err)
		}
		a, err := AnalyzeWith(s, s.Nodes[0].Name, "IPv4", Options{Lean: true}) // as drift, without the rules on the paths
		if err != nil {
			t.Fatal(err)
		}
		shared := 0
		for _, f := range a.Observed.Frontends {
			node, ext := f.Outcomes[behavior.FromNode].Backends, f.Outcomes[behavior.FromExternal].Backends
			if len(node) == 0 || len(ext) == 0 || len(node) != len(ext) {
				continue
			}
			equal := true
			for i := range node {
				equal = equal && node[i].Endpoint == ext[i].Endpoint && node[i].Probability == ext[i].Probability && node[i].HairpinMasquerade == ext[i].HairpinMasquerade && len(node[i].Rules) == 0 && len(ext[i].Rules) == 0
			}
			switch {
			case equal && &node[0] != &ext[0]:
				t.Errorf("%s: %s: the node's and the external sources' equal backends are two lists", file, f.Key)
			case equal:
				shared++
			}
		}
		if shared == 0 {
			t.Errorf("%s: no frontend whose node and external sources reach the same backends", file)
		}
	}
}
