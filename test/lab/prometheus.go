package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PrometheusTools returns the directory holding Debian's prometheus and
// promtool binaries (DIR/prometheus, DIR/promtool): the machine's release's
// package, downloaded with apt-get and unpacked once into the cache.
func PrometheusTools(ctx context.Context) (string, error) {
	root := filepath.Join(CacheDir(), "prometheus-debian")
	bin := filepath.Join(root, "usr", "bin")
	if _, err := os.Stat(filepath.Join(bin, "promtool")); err == nil {
		return bin, nil
	}
	tmp, err := os.MkdirTemp("", "svctrace-prometheus-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// apt-get writes as root when its _apt user cannot: the directory
	// is made readable to it first, to keep its warning out.
	_ = os.Chmod(tmp, 0o755)
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", "prometheus")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download prometheus (needs the apt lists: apt-get update): %w\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "prometheus_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download prometheus: %d .deb files in %s", len(debs), tmp)
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
		return "", fmt.Errorf("caching prometheus: %w", err)
	}
	return bin, nil
}
