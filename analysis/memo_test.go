package analysis_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestMemo: a drift check with a memo of the node's last check walks again
// only the Services whose walks read something that changed, and reports
// exactly what a check without it reports, whatever changed: nothing, a
// chain of one Service, a chain every walk reads, an endpoint object, a
// read's date.
func TestMemo(t *testing.T) {
	// A dump of a megabyte or more is read lazily, its per-Service chains
	// parsed by the walks that enter them (as on a large node).
	const services = 800
	base := snapshottest.Node(services, 3)
	// svc-7's last endpoint jump, the catch-all of its KUBE-SVC chain.
	svc7 := lineOf(t, base, `--comment "ns-7/svc-7:http -> `, "-j KUBE-SEP-", true)
	dispatch := lineOf(t, base, `--comment "ns-9/svc-9:http cluster IP"`, "-A KUBE-SERVICES", false)
	// svc-12's KUBE-SVC chain, and its rules.
	svc12 := lineOf(t, base, `--comment "ns-12/svc-12:http cluster IP"`, "-A KUBE-SERVICES", false)
	svc12 = "-A " + svc12[strings.LastIndex(svc12, "KUBE-SVC-"):] + " "
	emptied := func(keep int) func(s *snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string {
				var out strings.Builder
				n := 0
				for l := range strings.Lines(text) {
					if strings.HasPrefix(l, svc12) {
						if n++; n > keep {
							continue
						}
					}
					out.WriteString(l)
				}
				return out.String()
			})
		}
	}
	for _, tc := range []struct {
		name string
		// before, when set, makes the first check's state.
		before, change func(s *snapshot.Snapshot)
		// walked: the groups walked again (-1: every one).
		walked int
		drift  bool
	}{
		{name: "nothing changed", change: func(*snapshot.Snapshot) {}, walked: 0},
		{name: "another read's date", change: func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string { return strings.ReplaceAll(text, "Sat Nov 21", "Sun Nov 22") })
		}, walked: 0},
		{name: "an endpoint's jump deleted from one Service's chain", change: func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string { return strings.Replace(text, svc7+"\n", "", 1) })
		}, walked: 1, drift: true},
		{name: "a dispatch rule deleted from KUBE-SERVICES", change: func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string { return strings.Replace(text, dispatch+"\n", "", 1) })
		}, walked: -1, drift: true},
		{name: "a rule put back into a Service's emptied chain", before: emptied(0), change: emptied(2), walked: -1, drift: true},
		{name: "an endpoint gone from the API", change: func(s *snapshot.Snapshot) {
			es := &s.Cluster.EndpointSlices[3]
			es.Endpoints = es.Endpoints[1:]
		}, walked: -1, drift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := analysis.NewMemo()
			first := snapshottest.Node(services, 3)
			if tc.before != nil {
				tc.before(first)
			}
			check(t, first, memo)
			if reused, walked := memo.Counts("node1", "IPv4"); reused != 0 || walked < services {
				t.Fatalf("first check: %d groups reused, %d walked", reused, walked)
			}
			next := snapshottest.Node(services, 3)
			tc.change(next)
			got := check(t, next, memo)
			fresh := snapshottest.Node(services, 3)
			tc.change(fresh)
			want := check(t, fresh, nil)
			sameAsWithout(t, memo, "node1", got, want, tc.walked, tc.drift)
		})
	}
}

// sameAsWithout fails t unless got, a report with the memo, is want, the
// report of the same state without it, want has drift or not as drift
// says, and the memo's last check walked again walked groups of node (-1:
// every one).
func sameAsWithout(t *testing.T, memo *analysis.Memo, node, got, want string, walked int, drift bool) {
	t.Helper()
	if got != want {
		t.Errorf("with the memo:\n%s\nwithout:\n%s", got, want)
	}
	if hasDrift := strings.Contains(want, `"findings":[{`); hasDrift != drift {
		t.Errorf("drift found: %v, want %v:\n%s", hasDrift, drift, want)
	}
	reused, again := memo.Counts(node, "IPv4")
	switch {
	case walked >= 0 && again != walked:
		t.Errorf("%d groups walked again (%d reused), want %d", again, reused, walked)
	case walked < 0 && reused != 0:
		t.Errorf("%d groups reused (%d walked), want none", reused, again)
	}
}

// check is drift's report of s as JSON, with the memo when not nil.
func check(t *testing.T, s *snapshot.Snapshot, memo *analysis.Memo) string {
	t.Helper()
	r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Digest: true, Memo: memo})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineOf is the line of s's IPv4 iptables dump holding both marks, the
// last such line when last.
func lineOf(t *testing.T, s *snapshot.Snapshot, mark, and string, last bool) string {
	t.Helper()
	found := ""
	for _, d := range s.Nodes[0].Dumps {
		for l := range strings.Lines(d.Text) {
			if strings.Contains(l, mark) && strings.Contains(l, and) {
				found = strings.TrimSuffix(l, "\n")
				if !last {
					return found
				}
			}
		}
	}
	if found == "" {
		t.Fatalf("no line with %q and %q", mark, and)
	}
	return found
}

// editDumps rewrites the texts of s's dumps.
func editDumps(s *snapshot.Snapshot, edit func(string) string) {
	for i := range s.Nodes[0].Dumps {
		s.Nodes[0].Dumps[i].Text = edit(s.Nodes[0].Dumps[i].Text)
	}
}

// TestMemoNFTables: TestMemo's checks in nftables mode, where each of
// kube-proxy's per-Service chains is a part of the state: one Service's
// chain changed walks that Service again, a map every walk reads walks
// them all, and the reports are those of checks without the memo.
func TestMemoNFTables(t *testing.T) {
	const services = 200
	base := snapshottest.NodeNFTables(services, 3)
	// svc-7's rule that picks its endpoints, and the service-ips map's
	// elements, with its first element's chain.
	var pick, serviceIPs, first string
	for _, d := range base.Nodes[0].Dumps {
		for obj := range strings.SplitSeq(d.Text, `, {"rule": `) {
			if strings.Contains(obj, `-ns-7/svc-7/tcp/http", "handle"`) && strings.Contains(obj, `"mod": 3`) {
				pick = obj
			}
		}
		if i := strings.Index(d.Text, `"name": "service-ips"`); i >= 0 {
			rest := d.Text[i:]
			if j := strings.Index(rest, `"elem": [`); j >= 0 {
				serviceIPs = rest[:j+len(`"elem": [`)]
				_, first, _ = strings.Cut(rest[j:], `"target": "`)
				first, _, _ = strings.Cut(first, `"`)
			}
		}
	}
	if pick == "" || serviceIPs == "" || first == "" {
		t.Fatal("no rule picking svc-7's endpoints, or no service-ips map, in the dump")
	}
	for _, tc := range []struct {
		name   string
		change func(s *snapshot.Snapshot)
		walked int
		drift  bool
	}{
		{name: "nothing changed", change: func(*snapshot.Snapshot) {}, walked: 0},
		{name: "the rule picking one Service's endpoints changed", change: func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string {
				return strings.Replace(text, pick, strings.Replace(pick, `"mod": 3`, `"mod": 4`, 1), 1)
			})
		}, walked: 1, drift: true},
		{name: "an element added to the service-ips map", change: func(s *snapshot.Snapshot) {
			editDumps(s, func(text string) string {
				return strings.Replace(text, serviceIPs, serviceIPs+`[{"concat": ["10.96.255.254", "tcp", 81]}, {"goto": {"target": "`+first+`"}}], `, 1)
			})
		}, walked: -1, drift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := analysis.NewMemo()
			check(t, snapshottest.NodeNFTables(services, 3), memo)
			if reused, walked := memo.Counts("node1", "IPv4"); reused != 0 || walked < services {
				t.Fatalf("first check: %d groups reused, %d walked", reused, walked)
			}
			next := snapshottest.NodeNFTables(services, 3)
			tc.change(next)
			got := check(t, next, memo)
			fresh := snapshottest.NodeNFTables(services, 3)
			tc.change(fresh)
			want := check(t, fresh, nil)
			sameAsWithout(t, memo, "node1", got, want, tc.walked, tc.drift)
		})
	}
}
