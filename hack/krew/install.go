package krew

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// licenceNames are the file names krew's validation accepts as a licence.
var licenceNames = []string{"license", "license.txt", "license.md", "licenses", "licenses.txt",
	"licenses.md", "copying", "copying.txt"}

// FileSHA256 is the hexadecimal SHA-256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Install does what krew does with a downloaded archive: it extracts it,
// moves the platform's files into installDir, and checks that the binary
// and a licence are there. It returns the path of the binary.
func Install(archive string, p Platform, installDir string) (string, error) {
	staging, err := os.MkdirTemp("", "krew-staging")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	if err := extract(archive, staging); err != nil {
		return "", fmt.Errorf("extracting %s: %w", archive, err)
	}
	files := p.Files
	if files == nil {
		files = []FileOperation{{From: "*", To: "."}}
	}
	for i, f := range files {
		if err := move(staging, installDir, f); err != nil {
			return "", fmt.Errorf("%s: files[%d] (from %q): %w", archive, i, f.From, err)
		}
	}
	bin := filepath.Join(installDir, filepath.FromSlash(p.Bin))
	if !within(installDir, bin) {
		return "", fmt.Errorf("%s: bin %q is outside the installation directory", archive, p.Bin)
	}
	if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: bin %q is not among the installed files", archive, p.Bin)
	}
	if err := findLicence(installDir); err != nil {
		return "", fmt.Errorf("%s: %w", archive, err)
	}
	return bin, nil
}

// extract unpacks a tar.gz or zip archive, told apart by content as krew
// does, refusing entries that would land outside dir and entries that are
// neither files nor directories.
func extract(archive, dir string) error {
	data, err := os.ReadFile(archive)
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return extractTarGz(data, dir)
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return extractZip(data, dir)
	}
	return fmt.Errorf("neither a gzip-compressed tar nor a zip archive")
}

func extractTarGz(data []byte, dir string) error {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Name == "pax_global_header" {
			continue
		}
		path, err := entryPath(dir, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode))
		default:
			err = fmt.Errorf("entry %q is of tar type %q, which krew cannot unpack", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func extractZip(data []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		path, err := entryPath(dir, f.Name)
		if err != nil {
			return err
		}
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("entry %q: %w", f.Name, err)
		}
		err = writeFile(path, r, f.Mode())
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// entryPath is where an archive entry goes, refusing what krew refuses.
func entryPath(dir, name string) (string, error) {
	if strings.Contains(name, "..") {
		return "", fmt.Errorf("entry %q has \"..\" in its path", name)
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	return filepath.Join(dir, filepath.FromSlash(name)), nil
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// move carries out one file operation: From names one file, or is a glob
// whose matches go into the directory To.
func move(from, to string, op FileOperation) error {
	if op.To != filepath.Clean(op.To) {
		return fmt.Errorf("to %q is not a clean path", op.To)
	}
	src := filepath.Join(from, filepath.FromSlash(op.From))
	if st, err := os.Stat(src); err == nil && !st.IsDir() {
		dst := filepath.Join(to, filepath.FromSlash(op.To))
		if op.To == "." {
			dst = filepath.Join(to, filepath.Base(src))
		}
		return rename(from, to, src, dst)
	}
	matches, err := filepath.Glob(src)
	if err != nil {
		return err
	}
	if len(matches) == 0 {
		return fmt.Errorf("no file in the archive matches")
	}
	for _, m := range matches {
		if err := rename(from, to, m, filepath.Join(to, filepath.FromSlash(op.To), filepath.Base(m))); err != nil {
			return err
		}
	}
	return nil
}

func rename(fromBase, toBase, src, dst string) error {
	if !within(fromBase, src) || !within(toBase, dst) {
		return fmt.Errorf("moving %s to %s leaves the archive or the installation directory", src, dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(src, dst)
}

func within(base, path string) bool {
	rel, err := filepath.Rel(base, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// findLicence wants a licence file among the installed files, as krew's
// validation does.
func findLicence(dir string) error {
	var names []string
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			names = append(names, d.Name())
			for _, l := range licenceNames {
				if strings.EqualFold(d.Name(), l) {
					found = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no licence file among the installed files %v", names)
	}
	return nil
}
