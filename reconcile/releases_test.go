package reconcile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/snapshot"
)

// TestReleaseCaptures holds svctrace to the healthy nodes of each release
// captured in the lab (testdata/releases: the lab's matrix of Services,
// both nodes, under each release's real kube-proxy): drift finds nothing,
// and a repair plan in the release's own layout changes nothing.
func TestReleaseCaptures(t *testing.T) {
	files, err := filepath.Glob("../testdata/releases/*.snapshot.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("release captures: %v (%d files)", err, len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := snapshot.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4"})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range r.Findings {
				t.Errorf("finding on a healthy node: %s %s on %s: %s", f.Type, f.Service, f.Node, f.Message)
			}
			for _, n := range s.Nodes {
				p, err := PlanRules(s, RulesOptions{Node: n.Name})
				if err != nil {
					t.Fatal(err)
				}
				if p.Changes() != 0 || p.KubeProxyVersion != n.KubeProxy.Version {
					t.Errorf("%s: %d changes in the layout of %s, want none in %s's: %+v", n.Name, p.Changes(), p.KubeProxyVersion, n.KubeProxy.Version, p.Families)
				}
			}
		})
	}
}

// TestReleaseCapturesOtherRelease: each capture read as another release
// (its kube-proxy's version taken for a later one) gives the findings and
// changes that release would: the release model is what keeps the healthy
// nodes above healthy.
func TestReleaseCapturesOtherRelease(t *testing.T) {
	for _, c := range []struct {
		file, as, node string
		finding        string // a finding drift must give ("" none)
		changes        bool   // the repair plan must change something
	}{
		// v1.30 ignores default/zoned's hints (no topology annotation).
		{"lab-iptables-v1.30.14.snapshot.yaml", "v1.31.14", "node1", "StaleEndpoint default/zoned:http", true},
		// v1.32's nftables mode drops node2's own connection to a Local
		// policy load balancer without local endpoints; its base chains
		// are the beta layout's.
		{"lab-nftables-v1.32.13.snapshot.yaml", "v1.33.13", "node2", "LocalPolicyMismatch default/local-node1:http", true},
		// v1.35 writes no port in a service chain's masquerade rule.
		{"lab-nftables-v1.35.4.snapshot.yaml", "v1.33.13", "node1", "", true},
		// v1.37 DNATs a Service with one endpoint straight to it.
		{"lab-nftables-v1.37.2.snapshot.yaml", "v1.36.3", "node1", "", true},
	} {
		t.Run(c.file+" as "+c.as, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join("../testdata/releases", c.file))
			if err != nil {
				t.Fatal(err)
			}
			for i := range s.Nodes {
				s.Nodes[i].KubeProxy.Version = c.as
			}
			r, err := analysis.Drift(s, analysis.DriftOptions{Family: "IPv4", Nodes: []string{c.node}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Type+" "+f.Service)
			}
			if c.finding == "" && len(got) > 0 || c.finding != "" && !slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, c.finding) }) {
				t.Errorf("findings %q, want %q", got, c.finding)
			}
			p, err := PlanRules(s, RulesOptions{Node: c.node})
			if err != nil {
				t.Fatal(err)
			}
			if (p.Changes() > 0) != c.changes {
				t.Errorf("%d changes, want some: %v", p.Changes(), c.changes)
			}
		})
	}
}
