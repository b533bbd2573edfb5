package dataplane

import (
	"slices"
	"testing"
)

func TestNotesOnce(t *testing.T) {
	var n Notes
	n.Add("rule %d not evaluated", 3)
	n.Add("rule %d not evaluated", 3)
	n.Add("rule %d not evaluated", 4)
	if !slices.Equal(n, Notes{"rule 3 not evaluated", "rule 4 not evaluated"}) {
		t.Fatalf("notes %q", n)
	}
}
