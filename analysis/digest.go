package analysis

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// FrontendDigest is a compact account of what a node does with one
// frontend, to compare nodes without their dumps: per source class (in
// behavior.SourceClasses' order), the observed outcome as
// "VERDICT/BACKENDS/HASH" (the hash covers the verdict, each backend
// with its share, and masquerading), and the expected one where the
// node had the API objects.
type FrontendDigest struct {
	Key      string   `json:"k"`
	Service  string   `json:"s,omitempty"`
	Observed []string `json:"o"`
	Expected []string `json:"e,omitempty"`
}

// digests are the frontends of a node's analysis that are the same on
// every node (a NodePort bound to one node address is that node's own).
func digests(a *NodeAnalysis) []FrontendDigest {
	exp := map[behavior.Key]*behavior.Frontend{}
	if a.Expected != nil {
		for i := range a.Expected.Frontends {
			exp[a.Expected.Frontends[i].Key] = &a.Expected.Frontends[i]
		}
	}
	var out []FrontendDigest
	for i := range a.Observed.Frontends {
		f := &a.Observed.Frontends[i]
		if f.Key.Kind == behavior.NodePort && f.Key.IP != "" {
			continue
		}
		d := FrontendDigest{Key: f.Key.String(), Service: f.Service}
		for _, c := range behavior.SourceClasses {
			d.Observed = append(d.Observed, outcomeDigest(f.Outcomes[c]))
		}
		if e, ok := exp[f.Key]; ok {
			for _, c := range behavior.SourceClasses {
				d.Expected = append(d.Expected, outcomeDigest(e.Outcomes[c]))
			}
		}
		out = append(out, d)
	}
	return out
}

// outcomeDigest is "VERDICT/BACKENDS/HASH" of an outcome.
func outcomeDigest(o behavior.Outcome) string {
	verdict := o.Verdict
	if verdict == "" {
		verdict = behavior.Unhandled
	}
	backends := make([]string, 0, len(o.Backends))
	for _, b := range o.Backends {
		backends = append(backends, fmt.Sprintf("%s@%.3f", b.Endpoint, math.Round(b.Probability*1000)/1000))
	}
	slices.Sort(backends)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%v|%s", verdict, o.Masquerade, strings.Join(backends, ","))
	return fmt.Sprintf("%s/%d/%016x", verdict, len(backends), h.Sum64())
}

// describeDigest says what an outcome digest does, for people, for one
// node or (plural) several.
func describeDigest(d string, plural bool) string {
	verdict, rest, _ := strings.Cut(d, "/")
	n, _, _ := strings.Cut(rest, "/")
	verb := func(one, many string) string {
		if plural {
			return many
		}
		return one
	}
	switch behavior.Verdict(verdict) {
	case behavior.Forward:
		if n == "1" {
			return verb("forwards", "forward") + " to 1 backend"
		}
		return verb("forwards", "forward") + " to " + n + " backends"
	case behavior.Reject:
		return verb("rejects", "reject")
	case behavior.Drop:
		return verb("drops", "drop")
	}
	return verb("does", "do") + " not handle it"
}
