package ipvs

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

func physdevNotesOf(t *testing.T, ns *snapshot.NodeState) []string {
	t.Helper()
	pl, err := Loader{}.Load(ns, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*Plane).physdevNotes()
}

// TestPhysdevNotes: the lab node's kube-proxy (v1.36.3, ipvs mode) writes
// the external IPs' physdev ACCEPT (line 61) before the dst-type LOCAL
// ACCEPT (line 62): a note says the walk's assumption changes no outcome.
// Without the second rule, nothing stands in for the first: no note.
func TestPhysdevNotes(t *testing.T) {
	notes := physdevNotesOf(t, labNode(t))
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "nat/KUBE-SERVICES line 61 (-m physdev, KUBE-EXTERNAL-IP)") || !strings.Contains(notes[0], "line 62 (--dst-type LOCAL -j ACCEPT)") {
		t.Errorf("notes: %q", notes)
	}
	ns := labNode(t)
	edit(t, ns, snapshot.CollectorIPTablesSave, func(s string) string {
		return strings.Replace(s, "-m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT", "-m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j RETURN", 1)
	})
	if notes := physdevNotesOf(t, ns); len(notes) != 0 {
		t.Errorf("notes without the dst-type LOCAL ACCEPT: %q", notes)
	}
}
