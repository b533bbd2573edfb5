package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func spec() Spec {
	return Spec{
		Files: []File{
			{Path: "/usr/sbin/tool", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
			{Path: "/usr/bin/alias", Link: "../sbin/tool"},
			{Path: "/etc/conf", Data: []byte("x=1\n")},
		},
		Entrypoint: []string{"/usr/sbin/tool"},
		Env:        []string{"PATH=/usr/sbin:/usr/bin"},
	}
}

// TestBuildReproducible: the same files give the same digest; other files another.
func TestBuildReproducible(t *testing.T) {
	a, err := Build(spec())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(spec())
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests differ for the same spec: %v, %v", da, db)
	}
	s := spec()
	s.Files[2].Data = []byte("x=2\n")
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := c.Digest(); dc == da {
		t.Errorf("a changed file kept digest %v", dc)
	}
	cf, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || strings.Join(cf.Config.Entrypoint, " ") != "/usr/sbin/tool" || cf.Config.WorkingDir != "/" {
		t.Errorf("config %+v", cf)
	}
}

// TestLayerEntries: parent directories come first, each once; modes and links are kept.
func TestLayerEntries(t *testing.T) {
	img, err := Build(spec())
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e := h.Name
		switch h.Typeflag {
		case tar.TypeSymlink:
			e += " -> " + h.Linkname
		case tar.TypeReg:
			e += fmt.Sprintf(" %o", h.Mode)
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		got = append(got, e)
	}
	want := []string{"etc/", "usr/", "usr/bin/", "usr/sbin/", "etc/conf 644", "usr/bin/alias -> ../sbin/tool", "usr/sbin/tool 755"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("entries\n got %q\nwant %q", got, want)
	}
}

// TestBadFiles: unclean, relative, repeated paths and a file that is also a directory are
// refused, naming the path.
func TestBadFiles(t *testing.T) {
	for _, files := range [][]File{
		{{Path: "rel/x"}},
		{{Path: "/a/../b"}},
		{{Path: "/a"}, {Path: "/a"}},
		{{Path: "/a"}, {Path: "/a/b"}},
	} {
		if _, err := Build(Spec{Files: files}); err == nil || !strings.Contains(err.Error(), files[len(files)-1].Path[:2]) {
			t.Errorf("%v: err %v", files, err)
		}
	}
}

// TestWriteArchive: the archive reads back as the image.
func TestWriteArchive(t *testing.T) {
	img, err := Build(spec())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, map[string]v1.Image{"svctrace.local/test/tool:1": img}); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The archive's manifest is docker's; the config and the layer are the image's.
	c1, _ := img.ConfigName()
	c2, err := back.ConfigName()
	if err != nil || c1 != c2 {
		t.Errorf("read back config %v (%v), want %v", c2, err, c1)
	}
	if err := WriteArchive(&buf, map[string]v1.Image{"Not A Ref": img}); err == nil {
		t.Error("a bad reference was accepted")
	}
}
