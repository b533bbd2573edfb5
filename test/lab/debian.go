//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianPackage returns the directory where Debian's package pkg (of the
// machine's release) is unpacked: downloaded with apt-get and unpacked
// once into the cache, as CacheDir()/debian/PKG, so nothing is installed
// on the machine.
func debianPackage(ctx context.Context, pkg string) (string, error) {
	root := filepath.Join(CacheDir(), "debian", pkg)
	if _, err := os.Stat(root); err == nil {
		return root, nil
	}
	tmp, err := os.MkdirTemp("", "svctrace-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// apt-get writes as root when its _apt user cannot: the directory
	// is made readable to it first, to keep its warning out.
	_ = os.Chmod(tmp, 0o755)
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", pkg)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s (needs the apt lists: apt-get update): %w\n%s", pkg, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: %d .deb files in %s", pkg, len(debs), tmp)
	}
	unpack := filepath.Join(tmp, "x")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], unpack).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %w\n%s", debs[0], err, strings.TrimSpace(string(out)))
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return "", err
	}
	_ = os.RemoveAll(root)
	if err := os.Rename(unpack, root); err != nil {
		return "", fmt.Errorf("caching %s: %w", pkg, err)
	}
	return root, nil
}

// debianDependency is the package a metapackage stands for (the kernel
// image of linux-image-amd64, say), as apt-cache resolves it.
func debianDependency(ctx context.Context, meta, prefix string) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", meta).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s: %w", meta, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], prefix) {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s: no dependency named %s*", meta, prefix)
}
