package inspect

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/svctrace/svctrace/snapshot"
)

// healthzPort is kube-proxy's default --healthz-bind-address port.
const healthzPort = "10256"

// ReadProxySync is what kube-proxy says of its syncs, for the snapshot:
// its sync metrics for family at metricsAddr (host:port) and the status
// of its /healthz (ReadKubeProxyHealthz). Metrics that cannot be read are
// the error.
func ReadProxySync(ctx context.Context, metricsAddr, family string) (*snapshot.ProxySync, error) {
	at := time.Now()
	s, err := ReadKubeProxySync(ctx, metricsAddr, family)
	if err != nil {
		return nil, err
	}
	return NewProxySync(s, at, ReadKubeProxyHealthz(ctx, metricsAddr)), nil
}

// NewProxySync is the snapshot's record of kube-proxy's sync metrics s,
// read at at, and of its /healthz status (0: not read).
func NewProxySync(s KubeProxySync, at time.Time, healthz int) *snapshot.ProxySync {
	return &snapshot.ProxySync{
		ReadAt: at.UTC(), LastSync: s.LastSync.UTC(), LastQueued: s.LastQueued.UTC(), Healthz: healthz,
		RestoreFailures: s.RestoreFailures, PartialRestoreFailures: s.PartialRestoreFailures, NFTablesFailures: s.NFTablesFailures,
	}
}

// ReadKubeProxyHealthz is the status code of kube-proxy's /healthz on the
// host of metricsAddr, port 10256 (its default), which turns 503 once a
// change has waited longer than twice its sync period; 0 when it cannot
// be read.
func ReadKubeProxyHealthz(ctx context.Context, metricsAddr string) int {
	host, _, err := net.SplitHostPort(metricsAddr)
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, healthzPort)+"/healthz", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return resp.StatusCode
}
