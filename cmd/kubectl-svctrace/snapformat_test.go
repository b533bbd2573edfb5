package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/snapshot"
)

// TestBinarySnapshotSameAnswers: every bundled capture, written as .snap,
// gives the same explain of every Service on every node (loaded in part),
// and the same drift, as the YAML file.
func TestBinarySnapshotSameAnswers(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.snapshot.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled captures: %v", err)
	}
	explained := 0
	for _, yamlFile := range files {
		s, err := snapshot.Load(yamlFile)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "capture.snap")
		if err := snapshot.Save(s, bin); err != nil {
			t.Fatal(err)
		}
		same := func(args ...string) {
			t.Helper()
			wantOut, wantErr, wantCode := run(t, append(args, "--snapshot", yamlFile)...)
			gotOut, gotErr, gotCode := run(t, append(args, "--snapshot", bin)...)
			gotErr = strings.ReplaceAll(gotErr, bin, yamlFile)
			if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
				t.Errorf("%s %v: .snap gives exit %d:\n%s%s\nYAML gives exit %d:\n%s%s", filepath.Base(yamlFile), args, gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
			}
		}
		for _, n := range s.Nodes {
			same("drift", "-A", "--node", n.Name, "-o", "yaml")
			for _, svc := range s.Cluster.Services {
				same("explain", svc.Namespace+"/"+svc.Name, "--node", n.Name, "-o", "yaml")
				explained++
			}
			same("explain", "default/no-such-service", "--node", n.Name)
		}
	}
	if explained < 10 {
		t.Errorf("only %d explains compared", explained)
	}
}
