package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/behavior"
)

func fwd(eps ...string) behavior.Outcome {
	o := behavior.Outcome{Verdict: behavior.Forward}
	for _, e := range eps {
		o.Backends = append(o.Backends, behavior.Backend{Endpoint: e, Probability: 1 / float64(len(eps))})
	}
	return o
}

// TestOutcomeDigest: the same backends with kube-proxy's rounded shares
// digest alike, in any order; another backend, masquerading or verdict
// does not.
func TestOutcomeDigest(t *testing.T) {
	a := fwd("10.0.0.1:53", "10.0.0.2:53")
	b := behavior.Outcome{Verdict: behavior.Forward, Backends: []behavior.Backend{
		{Endpoint: "10.0.0.2:53", Probability: 0.5000000000}, {Endpoint: "10.0.0.1:53", Probability: 0.49999999997}}}
	if outcomeDigest(a) != outcomeDigest(b) {
		t.Errorf("%s != %s", outcomeDigest(a), outcomeDigest(b))
	}
	c := a
	c.Masquerade = true
	for _, o := range []behavior.Outcome{fwd("10.0.0.1:53", "10.0.0.3:53"), c, {Verdict: behavior.Reject}} {
		if outcomeDigest(o) == outcomeDigest(a) {
			t.Errorf("%+v digests as %+v", o, a)
		}
	}
	if got := describeDigest(outcomeDigest(a), false); got != "forwards to 2 backends" {
		t.Errorf("describe: %q", got)
	}
	if got := describeDigest(outcomeDigest(behavior.Outcome{}), false); got != "does not handle it" {
		t.Errorf("describe: %q", got)
	}
}

// node is a node whose frontend of kube-dns does obs for every class,
// and should do exp ("" without API objects).
func node(name string, obs, exp behavior.Outcome, withAPI bool) NodeFindings {
	d := FrontendDigest{Key: "ClusterIP 10.96.0.10:53/UDP", Service: "kube-system/kube-dns:dns"}
	for range behavior.SourceClasses {
		d.Observed = append(d.Observed, outcomeDigest(obs))
		if withAPI {
			d.Expected = append(d.Expected, outcomeDigest(exp))
		}
	}
	return NodeFindings{Node: name, Behaviour: []FrontendDigest{d}}
}

// TestCrossNode: a node doing otherwise than most of the nodes that
// should do the same is named; nodes that should differ (Local policies,
// hints: another expected outcome) are not compared; without a clear
// majority nothing is said; without API objects only a frontend most
// nodes handle and some do not is.
func TestCrossNode(t *testing.T) {
	three, two := fwd("a:53", "b:53", "c:53"), fwd("a:53", "b:53")
	var nodes []NodeFindings
	for i := range 41 {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), three, three, true))
	}
	nodes = append(nodes, node("x", two, three, true))
	// Nodes that should do otherwise (a Local policy), and do.
	nodes = append(nodes, node("local1", fwd("a:53"), fwd("a:53"), true), node("local2", fwd("b:53"), fwd("b:53"), true))
	nodes = append(nodes, NodeFindings{Node: "down", Err: fmt.Errorf("unreadable")})
	got := crossNode(nodes)
	want := []string{}
	for _, c := range behavior.SourceClasses {
		want = append(want, fmt.Sprintf("nodes differ: ClusterIP 10.96.0.10:53/UDP (kube-system/kube-dns:dns) from %s clients: node x forwards to 2 backends, the 41 other nodes forward to 3 backends", c))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Two against two: no majority.
	if got := crossNode([]NodeFindings{node("a", two, three, true), node("b", two, three, true),
		node("c", three, three, true), node("d", three, three, true)}); len(got) != 0 {
		t.Errorf("no majority: %q", got)
	}

	// Without API objects: a frontend three nodes of four handle.
	noAPI := []NodeFindings{node("a", three, three, false), node("b", two, three, false), node("c", three, three, false),
		{Node: "d", Behaviour: []FrontendDigest{}}}
	got = crossNode(noAPI)
	if len(got) != 1 || got[0] != "nodes differ: ClusterIP 10.96.0.10:53/UDP (kube-system/kube-dns:dns): not handled on d; the 3 other nodes handle it" {
		t.Errorf("without API objects: %q", got)
	}
}
