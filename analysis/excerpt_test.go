package analysis_test

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
)

// excerptOf replaces node1's iptables dump that holds kube-proxy's rules
// with the lines of it that contain grep, as `iptables-save | grep` gives
// them, after edit.
func excerptOf(t *testing.T, grep string, edit func(string) string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := &s.Nodes[0]
	for i, d := range n.Dumps {
		if d.Collector != "iptables-save" || !strings.Contains(d.Text, "KUBE-SERVICES") {
			continue
		}
		var lines []string
		for _, l := range strings.Split(d.Text, "\n") {
			if strings.Contains(l, grep) {
				lines = append(lines, l)
			}
		}
		n.Dumps[i].Text = edit(strings.Join(lines, "\n") + "\n")
		return s
	}
	t.Fatal("no iptables dump with kube-proxy's rules")
	return nil
}

// TestDriftOnAnExcerpt: a grep of one Service from the lab's healthy node
// proves no drift, and the findings of what it lacks (every other
// Service's frontends) are not reported but counted in a note; a stale
// endpoint the excerpt holds is proven, and reported.
func TestDriftOnAnExcerpt(t *testing.T) {
	s := excerptOf(t, "default/web:http", func(s string) string { return s })
	a, err := analysis.Analyze(s, s.Nodes[0].Name, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.Findings {
		t.Errorf("healthy excerpt: %s %s: %s", f.Type, f.Service, f.Message)
	}
	if !noteHas(a.Notes, "an excerpt of the rules cannot prove what it lacks: ") || !noteHas(a.Notes, "MissingFrontend findings not reported") {
		t.Errorf("no note of what the excerpt cannot prove: %q", a.Notes)
	}

	// The endpoint 10.244.2.10 replaced by one the API does not have.
	s = excerptOf(t, "default/web:http", func(s string) string { return strings.ReplaceAll(s, "10.244.2.10", "10.244.9.9") })
	a, err = analysis.Analyze(s, s.Nodes[0].Name, "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, f := range a.Findings {
		if f.Type != behavior.StaleEndpoint || !strings.Contains(f.Observed+f.Message+f.Endpoint, "10.244.9.9") {
			t.Errorf("excerpt with a stale endpoint: %s %s: %s", f.Type, f.Service, f.Message)
			continue
		}
		stale++
	}
	if stale == 0 {
		t.Errorf("the stale endpoint the excerpt holds is not reported: %+v", a.Findings)
	}
}

func noteHas(notes []string, part string) bool {
	for _, n := range notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}
