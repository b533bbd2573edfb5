package analysis

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// TestPreparedModelSameAnswers: a drift given the views prepared before
// the kernel was read reports exactly what one that builds them does, on
// every bundled capture; a view prepared for another node, family or
// cluster, or for a narrowed analysis, is not used.
func TestPreparedModelSameAnswers(t *testing.T) {
	files, err := filepath.Glob("../examples/*.snapshot.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled captures: %v", err)
	}
	used := 0
	for _, file := range files {
		s, err := snapshot.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if s.Cluster == nil {
			continue
		}
		want, err := Drift(s, DriftOptions{Family: "IPv4"})
		if err != nil {
			t.Fatal(err)
		}
		var models []*Model
		for _, n := range s.Nodes {
			models = append(models, PrepareModel(s.Cluster, n.Name, "IPv4", ""))
		}
		got, err := Drift(s, DriftOptions{Family: "IPv4", Models: models})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: with prepared views\n got %+v\nwant %+v", filepath.Base(file), got, want)
		}
		for _, m := range models {
			if m.fits(s.Cluster, m.node, "IPv4", m.topo, Options{}) {
				used++
			}
		}
		m := models[0]
		other := *s.Cluster
		ref := ServiceRef{Namespace: "default", Name: "kubernetes"}
		for name, fits := range map[string]bool{
			"another family":  m.fits(s.Cluster, m.node, "IPv6", m.topo, Options{}),
			"another node":    m.fits(s.Cluster, m.node+"-x", "IPv4", m.topo, Options{}),
			"another cluster": m.fits(&other, m.node, "IPv4", m.topo, Options{}),
			"narrowed":        m.fits(s.Cluster, m.node, "IPv4", m.topo, Options{Service: &ref}),
			"another release": m.fits(s.Cluster, m.node, "IPv4", model.Topology{ZoneHintsNeedAnnotation: true}, Options{}),
		} {
			if fits {
				t.Errorf("%s: a view prepared for node %s fits %s", filepath.Base(file), m.node, name)
			}
		}
	}
	if used < 3 {
		t.Errorf("only %d prepared views used", used)
	}
}
