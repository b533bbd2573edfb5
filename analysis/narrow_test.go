package analysis_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// TestNarrowedSameAnswers: an analysis narrowed to one Service (with and
// without the dumps' indexes a binary snapshot keeps), and a recheck of
// it, answer exactly what the whole node's analysis answers for that
// Service, on every bundled capture and every Service.
func TestNarrowedSameAnswers(t *testing.T) {
	files, err := filepath.Glob("../examples/*.snapshot.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled captures: %v", err)
	}
	checked, indexed := 0, 0
	for _, file := range files {
		s, err := snapshot.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if s.Cluster == nil {
			continue
		}
		si := withIndexes(t, s)
		for _, n := range si.Nodes {
			for _, d := range n.Dumps {
				if len(d.Index) > 0 {
					indexed++
				}
			}
		}
		for _, n := range s.Nodes {
			whole, err := analysis.Analyze(s, n.Name, "IPv4")
			if err != nil {
				t.Fatal(err)
			}
			for _, svc := range s.Cluster.Services {
				ref := analysis.ServiceRef{Namespace: svc.Namespace, Name: svc.Name}
				one, err := analysis.AnalyzeWith(s, n.Name, "IPv4", analysis.Options{Service: &ref})
				if err != nil {
					t.Fatal(err)
				}
				again, err := whole.Recheck(s.Cluster, ref)
				if err != nil {
					t.Fatal(err)
				}
				fromIndex, err := analysis.AnalyzeWith(si, n.Name, "IPv4", analysis.Options{Service: &ref})
				if err != nil {
					t.Fatal(err)
				}
				where := fmt.Sprintf("%s node %s %s", filepath.Base(file), n.Name, ref)
				if !reflect.DeepEqual(fromIndex.Notes, one.Notes) || !reflect.DeepEqual(fromIndex.Config, one.Config) {
					t.Errorf("%s: with the indexes, notes and settings differ:\n got %q %+v\nwant %q %+v", where, fromIndex.Notes, fromIndex.Config, one.Notes, one.Config)
				}
				want, wantF := ofService(whole, ref)
				for name, a := range map[string]*analysis.NodeAnalysis{"narrowed": one, "recheck": again, "indexed": fromIndex} {
					got, gotF := ofService(a, ref)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s: %s frontends differ:\n got %+v\nwant %+v", where, name, got, want)
					}
					if name == "recheck" {
						wantF = behaviourOnly(wantF)
					}
					if !reflect.DeepEqual(gotF, wantF) {
						t.Errorf("%s: %s findings differ:\n got %+v\nwant %+v", where, name, gotF, wantF)
					}
				}
				checked++
			}
		}
	}
	if checked < 10 || indexed < 2 {
		t.Errorf("only %d Services checked, %d dumps indexed", checked, indexed)
	}
}

// withIndexes is a copy of s whose dumps carry their planes' indexes.
func withIndexes(t *testing.T, s *snapshot.Snapshot) *snapshot.Snapshot {
	t.Helper()
	c := *s
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Dumps = slices.Clone(c.Nodes[i].Dumps)
	}
	if err := analysis.IndexDumps(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestRecheckSeesChange: a recheck after an EndpointSlice lost an endpoint
// reports the stale endpoint the kernel still holds.
func TestRecheckSeesChange(t *testing.T) {
	s := snapshottest.Node(20, 3)
	a, err := analysis.Analyze(s, "node1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Findings) != 0 {
		t.Fatalf("findings on a healthy node: %+v", a.Findings)
	}
	es := &s.Cluster.EndpointSlices[5]
	es.Endpoints = es.Endpoints[1:]
	ref := analysis.ServiceRef{Namespace: es.Namespace, Name: es.Labels["kubernetes.io/service-name"]}
	r, err := a.Recheck(s.Cluster, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Type != behavior.StaleEndpoint {
		t.Fatalf("recheck findings %+v, want one StaleEndpoint", r.Findings)
	}
	if n := len(r.Observed.Frontends); n != 1 {
		t.Errorf("recheck walked %d frontends, want the Service's one", n)
	}
}

// ofService is what an analysis says of one Service: its frontends
// (observed, expected) and its findings.
func ofService(a *analysis.NodeAnalysis, ref analysis.ServiceRef) ([]behavior.Frontend, []behavior.Finding) {
	var fs []behavior.Frontend
	for _, f := range a.Observed.Frontends {
		if ref.Matches(f.Service) {
			fs = append(fs, f)
		}
	}
	if a.Expected != nil {
		for _, f := range a.Expected.Frontends {
			if ref.Matches(f.Service) {
				fs = append(fs, f)
			}
		}
	}
	var out []behavior.Finding
	for _, f := range a.Findings {
		if ref.Matches(f.Service) {
			out = append(out, f)
		}
	}
	return fs, out
}

// behaviourOnly drops the findings that text-level checks and conntrack
// give (a recheck leaves them to the whole analysis).
func behaviourOnly(fs []behavior.Finding) []behavior.Finding {
	var out []behavior.Finding
	for _, f := range fs {
		switch f.Type {
		case behavior.OrphanChain, behavior.LeftoverRules, behavior.BackendSplitBrain, behavior.StaleConntrack:
			continue
		}
		out = append(out, f)
	}
	return out
}

// TestLeanSameFindings: a lean analysis (drift's) finds exactly what the
// whole one finds, rules included, on every bundled capture and on a node
// with drift.
func TestLeanSameFindings(t *testing.T) {
	files, err := filepath.Glob("../examples/*.snapshot.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled captures: %v", err)
	}
	var snaps []*snapshot.Snapshot
	for _, file := range files {
		s, err := snapshot.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	broken := snapshottest.Node(30, 3)
	broken.Cluster.EndpointSlices[4].Endpoints = broken.Cluster.EndpointSlices[4].Endpoints[1:]
	broken.Cluster.Services[9].Spec.Ports[0].Port = 81
	// Hairpin masquerading, which a lean analysis probes only where due:
	// lost for an endpoint on the node (a finding) and for one elsewhere
	// (none).
	node1 := "node1"
	broken.Cluster.EndpointSlices[12].Endpoints[1].NodeName = &node1
	dump := &broken.Nodes[0].Dumps[0].Text
	for _, ep := range []string{broken.Cluster.EndpointSlices[12].Endpoints[1].Addresses[0], broken.Cluster.EndpointSlices[13].Endpoints[0].Addresses[0]} {
		lines := strings.Split(*dump, "\n")
		n := len(lines)
		lines = slices.DeleteFunc(lines, func(l string) bool {
			return strings.Contains(l, " -s "+ep+"/32 ") && strings.HasSuffix(l, "-j KUBE-MARK-MASQ")
		})
		if len(lines) != n-1 {
			t.Fatalf("endpoint %s: %d hairpin rules removed, want 1", ep, n-len(lines))
		}
		*dump = strings.Join(lines, "\n")
	}
	snaps = append(snaps, broken)
	withRules, hairpin := 0, 0
	for i, s := range snaps {
		for _, n := range s.Nodes {
			whole, err := analysis.Analyze(s, n.Name, "IPv4")
			if err != nil {
				t.Fatal(err)
			}
			lean, err := analysis.AnalyzeWith(s, n.Name, "IPv4", analysis.Options{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(lean.Findings, whole.Findings) {
				t.Errorf("snapshot %d node %s: lean findings differ:\n got %+v\nwant %+v", i, n.Name, lean.Findings, whole.Findings)
			}
			for _, f := range lean.Findings {
				if len(f.Rules) > 0 {
					withRules++
				}
				if f.Type == behavior.MasqueradeMismatch && strings.Contains(f.Expected, "hairpin") {
					hairpin++
				}
			}
		}
	}
	if withRules == 0 {
		t.Error("no finding with rules: the test proves nothing")
	}
	if hairpin != 1 {
		t.Errorf("%d findings of a lost hairpin masquerade, want 1 (the endpoint on the node)", hairpin)
	}
}
