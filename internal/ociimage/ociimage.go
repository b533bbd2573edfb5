// Package ociimage builds small container images from files, reproducibly:
// one layer, fixed timestamps and ownership, so the same files give the
// same image digest. The lab's pause and test-server images and the
// svctrace image are made with it, and written as an archive that
// `ctr images import` (and `docker load`) reads, or pushed to a registry.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of the image's file system: a regular file (Data), or
// a symbolic link (Link).
type File struct {
	// Path is absolute inside the image ("/usr/sbin/nft").
	Path string
	// Mode is the permission bits (0o755 for a program); 0 means 0o644.
	Mode int64
	Data []byte
	Link string
}

// Spec describes an image.
type Spec struct {
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	// WorkingDir defaults to "/".
	WorkingDir string
	Labels     map[string]string
	// Architecture defaults to amd64; the OS is linux.
	Architecture string
}

// epoch is every entry's and the image's time: a build does not depend on
// when it ran.
var epoch = time.Unix(0, 0).UTC()

// Build makes the image: its files in one layer, with the directories they
// need, owned by root.
func Build(s Spec) (v1.Image, error) {
	data, err := layerTar(s.Files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = s.Architecture
	if cf.Architecture == "" {
		cf.Architecture = "amd64"
	}
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Cmd = s.Cmd
	cf.Config.Env = s.Env
	cf.Config.WorkingDir = s.WorkingDir
	if cf.Config.WorkingDir == "" {
		cf.Config.WorkingDir = "/"
	}
	cf.Config.Labels = s.Labels
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// layerTar is the layer's tar: every parent directory once, then the
// entries in path order.
func layerTar(files []File) ([]byte, error) {
	dirs := map[string]bool{}
	seen := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("image file %q: want a clean absolute path", f.Path)
		}
		if seen[f.Path] {
			return nil, fmt.Errorf("image file %q given twice", f.Path)
		}
		seen[f.Path] = true
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for d := range dirs {
			if !yield(d) {
				return
			}
		}
	}) {
		if seen[d] {
			return nil, fmt.Errorf("image file %q is also a directory", d)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, f := range sorted {
		h := &tar.Header{Name: f.Path[1:], Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		switch {
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
