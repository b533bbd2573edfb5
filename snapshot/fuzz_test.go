package snapshot_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/snapshot/snapshottest"
)

// FuzzDecodeBinary: no input makes the binary decoder panic, whole or in
// part, either as given or with its checksums made right (so that the
// parsing behind them is reached); what decodes encodes again.
func FuzzDecodeBinary(f *testing.F) {
	small := snapshottest.Node(3, 2)
	small.Cluster.Pods = richNode().Cluster.Pods[:4]
	for _, s := range []*snapshot.Snapshot{small} {
		data, err := snapshot.Encode(s, "seed.snap")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	s, err := snapshot.Load("../examples/two-nodes.snapshot.yaml")
	if err != nil {
		f.Fatal(err)
	}
	data, err := snapshot.Encode(s, "seed.snap")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	names := []types.NamespacedName{{Namespace: "ns-1", Name: "svc-1"}, {Namespace: "default", Name: "nginx"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, snapshot.FixChecksums(data)} {
			if s, err := snapshot.Decode(in); err == nil {
				if _, err := snapshot.Encode(s, "again.snap"); err != nil {
					t.Errorf("a decoded snapshot does not encode: %v", err)
				}
			} else if err.Error() == "" {
				t.Error("an empty error message")
			}
			if _, err := snapshot.DecodePartialBytes(in, names); err != nil && err.Error() == "" {
				t.Error("an empty error message")
			}
		}
	})
}
