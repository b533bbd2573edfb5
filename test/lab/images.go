//go:build linux

package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/svctrace/svctrace/internal/ociimage"
)

// Images the lab's nodes run, built here and imported into every node's containerd: nothing
// is pulled from a registry.
const (
	PauseImage  = "svctrace.local/lab/pause:1"
	LabnetImage = "svctrace.local/lab/labnet:1"
)

// buildImages writes the lab's images (pause, and labnet as the test servers' image) into one
// archive in dir and returns its path.
func (l *Lab) buildImages(dir string) (string, error) {
	pause, err := buildHelper(dir, "pause")
	if err != nil {
		return "", err
	}
	labnet, err := os.ReadFile(l.labnet)
	if err != nil {
		return "", err
	}
	images := map[string]v1.Image{}
	for ref, spec := range map[string]ociimage.Spec{
		PauseImage:  {Files: []ociimage.File{{Path: "/pause", Mode: 0o755, Data: pause}}, Entrypoint: []string{"/pause"}},
		LabnetImage: {Files: []ociimage.File{{Path: "/labnet", Mode: 0o755, Data: labnet}}, Entrypoint: []string{"/labnet"}},
	} {
		if images[ref], err = ociimage.Build(spec); err != nil {
			return "", fmt.Errorf("image %s: %w", ref, err)
		}
	}
	path := filepath.Join(dir, "lab-images.tar")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := ociimage.WriteArchive(f, images); err != nil {
		return "", err
	}
	return path, f.Close()
}

// buildHelper compiles the static helper test/lab/cmd/<name> and returns the binary.
func buildHelper(dir, name string) ([]byte, error) {
	out := filepath.Join(dir, name)
	pkg := "github.com/svctrace/svctrace/test/lab/cmd/" + name
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	if _, file, _, ok := runtime.Caller(0); ok {
		if d := filepath.Join(filepath.Dir(file), "cmd", name); dirExists(d) {
			cmd.Dir = d
		}
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return os.ReadFile(out)
}
