package snapshot_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
)

// TestNarrowIsPartialLoad: narrowing a whole cluster in memory gives what
// a partial load of the same snapshot written as .snap gives, Partial
// included, for every Service of the synthetic node and of every example.
func TestNarrowIsPartialLoad(t *testing.T) {
	cases := testSnapshots(t)
	for name, whole := range cases {
		path := filepath.Join(t.TempDir(), "s.snap")
		if err := snapshot.Save(whole, path); err != nil {
			t.Fatal(err)
		}
		var all []types.NamespacedName
		for _, svc := range whole.Cluster.Services {
			all = append(all, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
		}
		for _, names := range append([][]types.NamespacedName{all[:2], {{Namespace: "default", Name: "no-such"}}}, each(all)...) {
			loaded, err := snapshot.LoadPartial(path, names)
			if err != nil {
				t.Fatal(err)
			}
			got := whole.Cluster.Narrow(names, true)
			if !reflect.DeepEqual(got, loaded.Cluster) {
				t.Errorf("%s %v: narrowed in memory:\n%+v\nloaded in part:\n%+v", name, names, got, loaded.Cluster)
			}
			lean := whole.Cluster.Narrow(names, false)
			if len(lean.Partial.EndpointAddrs) != 0 || len(lean.Partial.ServiceNames) != 0 {
				t.Errorf("%s %v: a lean narrowing lists addresses or names", name, names)
			}
		}
	}
}

func each(all []types.NamespacedName) [][]types.NamespacedName {
	var out [][]types.NamespacedName
	for _, n := range all {
		out = append(out, []types.NamespacedName{n})
	}
	return out
}
