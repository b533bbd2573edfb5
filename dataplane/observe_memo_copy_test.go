package dataplane

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/svctrace/svctrace/behavior"
)

// TestPackFrontends checks a memo's packing of a group: what it gives
// back is what went in, its backends sorted as a table sorts them; equal
// lists of backends and equal strings are kept once; nothing of the walk's
// strings is kept; and a frontend given back shares only its lists of
// backends with the memo.
func TestPackFrontends(t *testing.T) {
	// The walk's strings are parts of a text, as a dump's are.
	text := "10.0.0.1:80 10.0.0.2:80 default/web:http TCP 10.96.0.10"
	part := func(s string) string {
		i := strings.Index(text, s)
		return text[i : i+len(s)]
	}
	backends := func(hairpin bool) []behavior.Backend {
		return []behavior.Backend{
			{Endpoint: part("10.0.0.1:80"), Probability: 0.5, HairpinMasquerade: hairpin},
			{Endpoint: part("10.0.0.2:80"), Probability: 0.5, HairpinMasquerade: hairpin},
		}
	}
	frontend := func(kind behavior.FrontendKind, ip string) behavior.Frontend {
		return behavior.Frontend{
			Key:      behavior.Key{Kind: kind, IP: ip, Port: 80, Protocol: part("TCP")},
			Service:  part("default/web:http"),
			Affinity: &behavior.Affinity{TimeoutSeconds: 10800},
			Outcomes: map[behavior.SourceClass]behavior.Outcome{
				behavior.FromPod:      {Verdict: behavior.Forward, Backends: backends(true)},
				behavior.FromNode:     {Verdict: behavior.Forward, Backends: backends(false), Masquerade: true},
				behavior.FromExternal: {Verdict: behavior.Forward, Backends: backends(false), Masquerade: true},
			},
		}
	}
	group := []behavior.Frontend{frontend(behavior.ClusterIP, part("10.96.0.10")), frontend(behavior.NodePort, "")}
	// A walk lists backends in the order it reaches them.
	ext := group[1].Outcomes[behavior.FromExternal]
	ext.Backends = slices.Clone(ext.Backends)
	slices.Reverse(ext.Backends)
	group[1].Outcomes[behavior.FromExternal] = ext
	p := newPacker()
	var packed []memoFrontend
	for _, f := range group {
		packed = append(packed, p.frontend(f))
	}

	table := behavior.Table{Frontends: slices.Clone(group)}
	table.Sort()
	for i, mf := range packed {
		if got := mf.unpack(); !reflect.DeepEqual(got, table.Frontends[i]) {
			t.Errorf("frontend %d given back as %+v, want %+v", i, got, table.Frontends[i])
		}
	}
	// Four outcomes reach the same backends, two reach them masquerading
	// the hairpin: two lists kept.
	lists := map[*behavior.Backend]bool{}
	for _, mf := range packed {
		for _, mo := range mf.outcomes {
			lists[&mo.o.Backends[0]] = true
			for _, b := range mo.o.Backends {
				if inText(text, b.Endpoint) {
					t.Errorf("the memo keeps the walk's string %q", b.Endpoint)
				}
			}
		}
		if inText(text, mf.f.Service) || inText(text, mf.f.Key.Protocol) || inText(text, mf.f.Key.IP) {
			t.Errorf("the memo keeps the walk's strings of %+v", mf.f.Key)
		}
	}
	if len(lists) != 2 {
		t.Errorf("%d lists of backends kept, want 2", len(lists))
	}
	if packed[0].f.Service != packed[1].f.Service || unsafe.StringData(packed[0].f.Service) != unsafe.StringData(packed[1].f.Service) {
		t.Error("the group's Service name is kept twice")
	}

	// A table's own are its map of outcomes and its affinity; its sort
	// leaves the memo's lists as they are.
	got := behavior.Table{Frontends: []behavior.Frontend{packed[1].unpack()}}
	got.Sort()
	got.Frontends[0].Affinity.TimeoutSeconds = 1
	got.Frontends[0].Outcomes[behavior.FromPod] = behavior.Outcome{Verdict: behavior.Drop}
	if again := packed[1].unpack(); !reflect.DeepEqual(again, table.Frontends[1]) {
		t.Errorf("changing a frontend given back changed the memo: %+v", again)
	}
}

// inText says whether s lies in text's memory.
func inText(text, s string) bool {
	if s == "" {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= lo && p < lo+uintptr(len(text))
}
