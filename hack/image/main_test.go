package main

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/svctrace/svctrace/internal/slowtest"
)

// TestBuildAndPush builds the svctrace image as hack/image.sh does, writes the archive and
// pushes it to a registry (go-containerregistry's, in this process): the pushed image is the
// archive's, and holds the binary and the kernel tools.
func TestBuildAndPush(t *testing.T) {
	slowtest.Need(t, "builds the image from Debian packages")
	if _, err := exec.LookPath("apt-get"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("apt-get missing")
		}
		t.Skip("no apt-get: the image takes its tools from Debian packages")
	}
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/svctrace:test"
	archive := filepath.Join(t.TempDir(), "svctrace.tar")
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(wd, "..", "..")); err != nil { // the module root, as hack/image.sh runs it
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if err := run("v0.0.0-test", archive, "", ref, filepath.Join(userCache(), "svctrace-image", "debs")); err != nil {
		t.Fatal(err)
	}
	local, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	lc, _ := local.ConfigName()
	pc, err := pushed.ConfigName()
	if err != nil || lc != pc {
		t.Errorf("pushed config %v (%v), archive's %v", pc, err, lc)
	}
	cf, err := pushed.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/kubectl-svctrace" || cf.Config.Labels["org.opencontainers.image.version"] != "v0.0.0-test" {
		t.Errorf("config %+v", cf.Config)
	}
	for _, pkg := range packages {
		if !strings.Contains(cf.Config.Labels["dev.svctrace.debian-packages"], pkg+"=") {
			t.Errorf("package %s not in the image's label %q", pkg, cf.Config.Labels["dev.svctrace.debian-packages"])
		}
	}
}
