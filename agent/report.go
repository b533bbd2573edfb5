package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
)

// Report is what the agent tells the CLI of its node: its last successful
// check, with the findings in full (rules, client addresses). It is served
// on a Unix socket inside the agent's Pod only, which the CLI reaches by
// exec through the API server: its authorization and audit apply.
type Report struct {
	Node string `json:"node"`
	// CheckedAt is when the check reported started; zero before the
	// first successful check.
	CheckedAt time.Time `json:"checkedAt,omitzero"`
	// RulesReadAt, when set, says the check read nothing of the kernel:
	// its digest was the one of the read that started then, whose
	// findings stand.
	RulesReadAt time.Time `json:"rulesReadAt,omitzero"`
	// Error is why the last check failed, when it did (the findings are
	// then the last good check's, as old as CheckedAt).
	Error     string             `json:"error,omitempty"`
	Ready     bool               `json:"ready"`
	Mode      string             `json:"mode,omitempty"`
	Backend   string             `json:"backend,omitempty"`
	Version   string             `json:"kubeProxyVersion,omitempty"`
	Frontends int                `json:"frontends"`
	Drift     []behavior.Finding `json:"drift"`
	Pending   []behavior.Finding `json:"pending"`
	Notes     []string           `json:"notes,omitempty"`
	// KubeProxyStalled says kube-proxy has left changes waiting longer
	// than allowed; KubeProxyLag how long it has.
	KubeProxyStalled bool          `json:"kubeProxyStalled,omitempty"`
	KubeProxyLag     time.Duration `json:"kubeProxyLagNanoseconds,omitempty"`
	// KubeProxyWaiting says kube-proxy had a change queued at the check:
	// the pending findings are its lag. Without it they are differences
	// the agent checks again shortly before it calls them drift.
	KubeProxyWaiting bool `json:"kubeProxyWaiting,omitempty"`
	// KubeProxyAbsent says kube-proxy does not answer on the node, where
	// its DaemonSet runs it.
	KubeProxyAbsent bool `json:"kubeProxyAbsent,omitempty"`
	// Behaviour is the digest of what the node does with each frontend.
	Behaviour []analysis.FrontendDigest `json:"behaviour,omitempty"`
	// ServiceFrontends counts each Service port's frontends, for a
	// report scoped to a namespace or a Service.
	ServiceFrontends map[string]int `json:"serviceFrontends,omitempty"`
}

// ReportOf is the report of a status.
func ReportOf(s *Status) Report {
	r := Report{Node: s.Node, Ready: s.Ready(), Drift: []behavior.Finding{}, Pending: []behavior.Finding{}}
	if s.Last != nil && s.Last.Err != nil {
		r.Error = s.Last.Err.Error()
	}
	if g := s.Good; g != nil {
		r.CheckedAt, r.RulesReadAt, r.Frontends, r.Notes = g.At, g.ReadAt, g.Frontends, g.Notes
		r.Mode, r.Backend, r.Version = g.KubeProxy.Mode, g.KubeProxy.Backend, g.KubeProxy.Version
		r.KubeProxyStalled, r.KubeProxyLag, r.KubeProxyWaiting = g.KubeProxy.Stalled, g.KubeProxy.Lag, g.KubeProxy.Waiting
		r.KubeProxyAbsent = g.KubeProxy.Absent
		r.Behaviour, r.ServiceFrontends = g.Behaviour, g.ServiceFrontends
		r.Drift = append(r.Drift, g.Drift...)
		r.Pending = append(r.Pending, g.Pending...)
	}
	return r
}

// DefaultSocket is where the agent serves its reports.
const DefaultSocket = "/run/svctrace/agent.sock"

// ServeSocket serves the agent's report at GET /report on a Unix socket at
// path (owner-only), until ctx ends.
func ServeSocket(ctx context.Context, path string, status func() *Status) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("agent socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ReportOf(status()))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("agent socket: %w", err)
	}
	return nil
}

// ReadReport asks the agent serving the socket at path for its report and
// writes it (JSON) to w.
func ReadReport(ctx context.Context, path string, w io.Writer) error {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent/report", nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("asking the agent at %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("asking the agent at %s: %s", path, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
