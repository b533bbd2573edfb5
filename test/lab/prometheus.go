//go:build linux

package lab

import (
	"context"
	"path/filepath"
)

// PrometheusTools returns the directory holding Debian's prometheus and
// promtool binaries (DIR/prometheus, DIR/promtool): the machine's release's
// package, downloaded and unpacked once into the cache.
func PrometheusTools(ctx context.Context) (string, error) {
	root, err := debianPackage(ctx, "prometheus")
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "usr", "bin"), nil
}
