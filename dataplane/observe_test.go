package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
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

// scopeRecorder is a ScopedWalker that records which destinations each
// scope's walks went to; every walk is rejected.
type scopeRecorder struct {
	mu     sync.Mutex
	scopes []map[netip.Addr]bool
}

func (r *scopeRecorder) Walk(p Packet) []Branch { return r.WalkWith(p, WalkOptions{}) }

func (r *scopeRecorder) WalkWith(Packet, WalkOptions) []Branch {
	return []Branch{{Probability: 1, Verdict: Reject}}
}

func (r *scopeRecorder) Scope() (Walker, func()) {
	seen := map[netip.Addr]bool{}
	r.mu.Lock()
	r.scopes = append(r.scopes, seen)
	r.mu.Unlock()
	return scoped{seen}, func() {}
}

type scoped struct{ seen map[netip.Addr]bool }

func (s scoped) Walk(p Packet) []Branch { return s.WalkWith(p, WalkOptions{}) }

func (s scoped) WalkWith(p Packet, _ WalkOptions) []Branch {
	s.seen[p.Dst] = true
	return []Branch{{Probability: 1, Verdict: Reject}}
}

// TestObserveScopesByService: the frontends of one Service port are
// walked in one scope (they walk the same chains), each Service's in a
// scope of its own, and a frontend of no known Service alone.
func TestObserveScopesByService(t *testing.T) {
	keys := map[behavior.Key]*behavior.Frontend{}
	var order []behavior.Key
	add := func(ip, svc string) {
		k := behavior.Key{Kind: behavior.ClusterIP, IP: ip, Port: 80, Protocol: "TCP"}
		keys[k] = &behavior.Frontend{Key: k, Service: svc}
		order = append(order, k)
	}
	add("10.96.0.1", "a/x:http")
	add("10.96.0.2", "b/y:http")
	add("10.96.0.3", "a/x:http")
	add("10.96.0.4", "")
	add("10.96.0.5", "")
	r := &scopeRecorder{}
	space := behavior.NewProbeSpace(nil, []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil)
	observeAll(r, nil, &Env{}, space, keys, order, nil, nil)
	var got []string
	for _, s := range r.scopes {
		var dsts []string
		for a := range s {
			dsts = append(dsts, a.String())
		}
		slices.Sort(dsts)
		got = append(got, strings.Join(dsts, " "))
	}
	slices.Sort(got)
	want := []string{"10.96.0.1 10.96.0.3", "10.96.0.2", "10.96.0.4", "10.96.0.5"}
	if !slices.Equal(got, want) {
		t.Errorf("scopes walked %q, want %q", got, want)
	}
}

// TestShareBackends: the source classes whose backends are equal share
// one list, a class whose backends differ (the pods', masqueraded on a
// hairpin) keeps its own, and every outcome keeps its backends.
func TestShareBackends(t *testing.T) {
	list := func(hairpin bool) []behavior.Backend {
		return []behavior.Backend{{Endpoint: "10.0.0.1:80", Probability: 0.5, HairpinMasquerade: hairpin}, {Endpoint: "10.0.0.2:80", Probability: 0.5, HairpinMasquerade: hairpin}}
	}
	outcomes := map[behavior.SourceClass]behavior.Outcome{
		behavior.FromPod:      {Verdict: behavior.Forward, Backends: list(true)},
		behavior.FromNode:     {Verdict: behavior.Forward, Backends: list(false), Masquerade: true},
		behavior.FromExternal: {Verdict: behavior.Forward, Backends: list(false), Masquerade: true},
	}
	shareBackends(outcomes)
	pod, node, ext := outcomes[behavior.FromPod].Backends, outcomes[behavior.FromNode].Backends, outcomes[behavior.FromExternal].Backends
	if &node[0] != &ext[0] {
		t.Error("the node's and the external sources' equal backends are two lists")
	}
	if &pod[0] == &node[0] {
		t.Error("the pods' backends, masqueraded on a hairpin, share the node's list")
	}
	same := func(a, b []behavior.Backend) bool { return slices.EqualFunc(a, b, sameBackend) }
	if !same(pod, list(true)) || !same(node, list(false)) || !same(ext, list(false)) {
		t.Errorf("backends changed: %+v, %+v, %+v", pod, node, ext)
	}
}
