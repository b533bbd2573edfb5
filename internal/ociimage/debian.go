package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Debian packages are the source of the programs an image runs besides its
// own (iptables, nft, conntrack, ...): DebianFiles takes them, with what
// they depend on, from the machine's apt sources.

// DebianOptions says which packages to take.
type DebianOptions struct {
	// Packages are taken with their dependencies (Depends and
	// Pre-Depends, not Recommends), as apt resolves them.
	Packages []string
	// Exclude are dependencies left out (init-script helpers a container
	// never runs).
	Exclude []string
	// CacheDir keeps the downloaded .deb files; a package whose .deb is
	// there is not downloaded again.
	CacheDir string
}

// skippedPaths are package contents an image does without.
var skippedPaths = []string{"/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/",
	"/usr/share/lintian/", "/usr/share/bug/", "/etc/init.d/", "/etc/default/", "/usr/share/bash-completion/"}

// DebianFiles returns the files of the packages and their dependencies, and
// the packages taken as "name=version", sorted. It runs apt-cache,
// apt-get download and dpkg-deb.
func DebianFiles(ctx context.Context, o DebianOptions) ([]File, []string, error) {
	names, err := debianClosure(ctx, o.Packages, o.Exclude)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, nil, err
	}
	var files []File
	var taken []string
	byPath := map[string]int{}
	for _, name := range names {
		deb, err := debianFetch(ctx, o.CacheDir, name)
		if err != nil {
			return nil, nil, err
		}
		version := strings.SplitN(filepath.Base(deb), "_", 3)[1]
		taken = append(taken, name+"="+strings.ReplaceAll(version, "%3a", ":"))
		fs, err := debContents(ctx, deb)
		if err != nil {
			return nil, nil, fmt.Errorf("package %s: %w", name, err)
		}
		for _, f := range fs {
			if i, ok := byPath[f.Path]; ok {
				if !bytes.Equal(files[i].Data, f.Data) || files[i].Link != f.Link {
					return nil, nil, fmt.Errorf("package %s: %s differs from another package's", name, f.Path)
				}
				continue
			}
			byPath[f.Path] = len(files)
			files = append(files, f)
		}
	}
	return files, taken, nil
}

// debianClosure lists the packages and what they depend on, by name, sorted.
func debianClosure(ctx context.Context, packages, exclude []string) ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, packages...)
	out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache depends %s: %w%s", strings.Join(packages, " "), err, stderrOf(err))
	}
	set := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		// Package names start a line; virtual packages are <name>.
		if line == "" || line[0] == ' ' || line[0] == '<' {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		if !slices.Contains(exclude, name) {
			set[name] = true
		}
	}
	for _, p := range packages {
		if !set[p] {
			return nil, fmt.Errorf("apt-cache depends: no package %s in the machine's apt sources", p)
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range set {
			if !yield(n) {
				return
			}
		}
	}), nil
}

// debianFetch returns the .deb of a package in dir, downloading it first
// when dir has none.
func debianFetch(ctx context.Context, dir, name string) (string, error) {
	have, _ := filepath.Glob(filepath.Join(dir, name+"_*.deb"))
	if len(have) == 1 {
		return have[0], nil
	}
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", name)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w\n%s", name, err, out)
	}
	have, _ = filepath.Glob(filepath.Join(dir, name+"_*.deb"))
	if len(have) != 1 {
		return "", fmt.Errorf("apt-get download %s: found %d .deb files for it in %s", name, len(have), dir)
	}
	return have[0], nil
}

// debContents reads a .deb's files (regular files and symbolic links;
// hard links become copies), leaving out skippedPaths.
func debContents(ctx context.Context, deb string) ([]File, error) {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w%s", deb, err, stderrOf(err))
	}
	tr := tar.NewReader(bytes.NewReader(out))
	var files []File
	data := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", deb, err)
		}
		p := path.Clean("/" + h.Name)
		if p == "/" || slices.ContainsFunc(skippedPaths, func(s string) bool { return strings.HasPrefix(p+"/", s) }) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeSymlink:
			files = append(files, File{Path: p, Link: h.Linkname})
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", deb, p, err)
			}
			data[p] = b
			files = append(files, File{Path: p, Mode: h.Mode & 0o7777, Data: b})
		case tar.TypeLink:
			target := path.Clean("/" + h.Linkname)
			b, ok := data[target]
			if !ok {
				return nil, fmt.Errorf("%s: hard link %s to %s, which comes later or not at all", deb, p, target)
			}
			files = append(files, File{Path: p, Mode: h.Mode & 0o7777, Data: b})
		default:
			return nil, fmt.Errorf("%s: %s: entry type %q not supported", deb, p, h.Typeflag)
		}
	}
	return files, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
