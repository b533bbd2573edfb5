package dataplane

import (
	"slices"
	"testing"
)

// TestHookPaths follows every way through the hooks: the hooks a packet
// meets from each entry, with its destination local or not.
func TestHookPaths(t *testing.T) {
	tests := []struct {
		entry Entry
		local bool
		want  []Hook
	}{
		{Prerouting, false, []Hook{HookPrerouting, HookForward, HookPostrouting}},
		{Prerouting, true, []Hook{HookPrerouting, HookInput}},
		{Output, false, []Hook{HookOutput, HookPostrouting}},
		{Output, true, []Hook{HookOutput, HookPostrouting, HookInput}},
		{"sideways", true, []Hook{HookPrerouting, HookInput}},
	}
	for _, tt := range tests {
		var got []Hook
		hooks := EntryHooks(tt.entry)
		for len(hooks) > 0 {
			h, rest := hooks[0], hooks[1:]
			if h.IsRoute() {
				hooks = h.Route(tt.local, rest)
				continue
			}
			got = append(got, h)
			hooks = rest
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("entry %s, local %v: hooks %v, want %v", tt.entry, tt.local, got, tt.want)
		}
	}
}

func TestRouteKeepsRest(t *testing.T) {
	rest := []Hook{HookPostrouting, RouteLoopback}
	if got := RouteArriving.Route(true, rest); !slices.Equal(got, []Hook{HookInput, HookPostrouting, RouteLoopback}) {
		t.Errorf("RouteArriving.Route(local) = %v", got)
	}
	if got := HookForward.Route(true, rest); !slices.Equal(got, []Hook{HookForward, HookPostrouting, RouteLoopback}) {
		t.Errorf("a hook's Route = %v, want it in front of rest", got)
	}
	if HookInput.IsRoute() || !RouteLoopback.IsRoute() {
		t.Error("IsRoute is wrong")
	}
}
