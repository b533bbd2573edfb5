package inspect

import (
	"context"
	"encoding/json"
	"io"
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

// Healthz is what kube-proxy's /healthz answered: its status code (0: not
// read) and whether it says the node is not eligible (being deleted),
// which is no sync trouble.
type Healthz struct {
	Status         int
	NodeIneligible bool
}

// NewProxySync is the snapshot's record of kube-proxy's sync metrics s,
// read at at, and of its /healthz.
func NewProxySync(s KubeProxySync, at time.Time, h Healthz) *snapshot.ProxySync {
	return &snapshot.ProxySync{
		ReadAt: at.UTC(), LastSync: s.LastSync.UTC(), LastQueued: s.LastQueued.UTC(), Healthz: h.Status, NodeIneligible: h.NodeIneligible,
		RestoreFailures: s.RestoreFailures, PartialRestoreFailures: s.PartialRestoreFailures, NFTablesFailures: s.NFTablesFailures,
	}
}

// ReadKubeProxyHealthz is kube-proxy's /healthz on the host of
// metricsAddr, port 10256 (its default), which turns 503 once a change has
// waited longer than twice its sync period, or while the node is being
// deleted (its body then says nodeEligible false).
func ReadKubeProxyHealthz(ctx context.Context, metricsAddr string) Healthz {
	host, _, err := net.SplitHostPort(metricsAddr)
	if err != nil {
		return Healthz{}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, healthzPort)+"/healthz", nil)
	if err != nil {
		return Healthz{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Healthz{}
	}
	defer resp.Body.Close()
	var body struct {
		NodeEligible *bool `json:"nodeEligible"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body)
	return Healthz{Status: resp.StatusCode, NodeIneligible: body.NodeEligible != nil && !*body.NodeEligible}
}
