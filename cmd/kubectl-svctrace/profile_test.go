package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestProfileFlag: --profile writes the profile named to --profile-output
// once the command has run, also when the command found drift; an unknown
// name is refused.
func TestProfileFlag(t *testing.T) {
	for _, name := range []string{"cpu", "heap", "goroutine"} {
		out := filepath.Join(t.TempDir(), name+".pprof")
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		root, prof := newRootCommandProfiled(streams)
		root.SetArgs([]string{"drift", "--snapshot", "../../examples/two-nodes.snapshot.yaml", "--profile", name, "--profile-output", out})
		root.Execute()
		if err := prof.stop(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// A profile is a gzipped protocol buffer.
		z, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: the file is not a profile: %v", name, err)
		}
		if raw, err := io.ReadAll(z); err != nil || len(raw) == 0 {
			t.Errorf("%s: the file is not a profile: %d bytes, %v", name, len(raw), err)
		}
	}
	if _, errOut, code := run(t, "version", "--profile", "bogus"); code != exitError || !bytes.Contains([]byte(errOut), []byte("want one of")) {
		t.Errorf("--profile bogus: exit %d, %q", code, errOut)
	}
}
