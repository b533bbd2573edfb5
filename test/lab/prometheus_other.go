//go:build !linux

package lab

import (
	"context"
	"fmt"
	"runtime"
)

// PrometheusTools needs the Debian package of a Linux machine.
func PrometheusTools(context.Context) (string, error) {
	return "", fmt.Errorf("prometheus tools: Debian's packages need Linux, not %s", runtime.GOOS)
}
