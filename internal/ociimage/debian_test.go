package ociimage

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/slowtest"
)

// TestDebianFiles takes iptables and its dependencies from the machine's apt sources (CI
// installs apt's lists with the kernel tools; this machine's registries include Debian's).
func TestDebianFiles(t *testing.T) {
	slowtest.Need(t, "downloads Debian packages")
	if _, err := exec.LookPath("apt-get"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("apt-get missing")
		}
		t.Skip("no apt-get")
	}
	dir := os.Getenv("SVCTRACE_DEB_CACHE")
	if dir == "" {
		dir = t.TempDir()
	}
	files, taken, err := DebianFiles(context.Background(), DebianOptions{
		Packages: []string{"iptables"}, Exclude: []string{"lsb-base", "sysvinit-utils"}, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(taken, " ")
	for _, want := range []string{"iptables=", "libc6=", "libxtables12="} {
		if !strings.Contains(names, want) {
			t.Errorf("packages %s lack %s", names, want)
		}
	}
	if strings.Contains(names, "lsb-base") {
		t.Errorf("excluded package taken: %s", names)
	}
	has := func(p string) bool { return slices.ContainsFunc(files, func(f File) bool { return f.Path == p }) }
	for _, p := range []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/iptables-nft", "/lib64/ld-linux-x86-64.so.2"} {
		if !has(p) {
			t.Errorf("no %s among %d files", p, len(files))
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f.Path, "/usr/share/doc/") {
			t.Errorf("documentation kept: %s", f.Path)
			break
		}
	}
	if _, err := Build(Spec{Files: files}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DebianFiles(context.Background(), DebianOptions{Packages: []string{"no-such-package-svctrace"}, CacheDir: dir}); err == nil {
		t.Error("an unknown package was accepted")
	}
}
