package krew

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/internal/slowtest"
)

const releaseVersion = "v0.0.0-krewtest"

// TestRelease builds the release with hack/release.sh into a temporary
// directory and checks the manifest it writes as krew would: the
// structure, every sha256 against its archive, an installation of every
// archive with its binary and licence, and the binary of this machine's
// platform printing the version.
func TestRelease(t *testing.T) {
	slowtest.Need(t, "builds a release for six platforms")
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command("bash", "../release.sh", releaseVersion, out)
	cmd.Env = append(os.Environ(), "RELEASE_URL=https://example.invalid/releases/"+releaseVersion)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, msg)
	}
	t.Logf("hack/release.sh took %s", time.Since(start).Round(time.Second))

	p, err := ReadManifest(filepath.Join(out, "svctrace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != releaseVersion {
		t.Errorf("spec.version = %q, want %q", p.Spec.Version, releaseVersion)
	}
	_, err = os.Stat("../../kubectl_complete-svctrace")
	withCompletion := err == nil
	here := OSArch{runtime.GOOS, runtime.GOARCH}
	var covered []OSArch
	ranHere := false
	for i, pl := range p.Spec.Platforms {
		covered = append(covered, Matching(pl.Selector)...)
		prefix := "https://example.invalid/releases/" + releaseVersion + "/"
		if !strings.HasPrefix(pl.URI, prefix) {
			t.Errorf("platforms[%d]: uri %q is not under RELEASE_URL %s", i, pl.URI, prefix)
		}
		archive := filepath.Join(out, path.Base(pl.URI))
		sum, err := FileSHA256(archive)
		if err != nil {
			t.Fatalf("platforms[%d]: %v", i, err)
		}
		if sum != pl.Sha256 {
			t.Errorf("platforms[%d]: sha256 %s, but %s has %s", i, pl.Sha256, archive, sum)
		}
		names := tarNames(t, archive)
		wantCompletion := withCompletion && !slices.ContainsFunc(Matching(pl.Selector), func(oa OSArch) bool { return oa.OS == "windows" })
		if slices.Contains(names, "kubectl_complete-svctrace") != wantCompletion {
			t.Errorf("%s holds %v; completion script expected: %v", archive, names, wantCompletion)
		}
		bin, err := Install(archive, pl, filepath.Join(t.TempDir(), "install"))
		if err != nil {
			t.Errorf("platforms[%d]: %v", i, err)
			continue
		}
		if !slices.Contains(Matching(pl.Selector), here) {
			continue
		}
		ranHere = true
		got, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || string(got) != "svctrace "+releaseVersion+"\n" {
			t.Errorf("%s version: %q (%v), want \"svctrace %s\"", bin, got, err, releaseVersion)
		}
	}
	for _, want := range []OSArch{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"},
		{"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"}} {
		if !slices.Contains(covered, want) {
			t.Errorf("no platform of the manifest installs on %s", want)
		}
	}
	if !ranHere {
		t.Errorf("no archive for this machine (%s): its binary was not run", here)
	}
}

// tarNames lists the entries of a tar.gz archive.
func tarNames(t *testing.T, archive string) []string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		names = append(names, h.Name)
	}
}
