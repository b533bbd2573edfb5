package nodeapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Runner runs svctrace with args and stdin in the agent's container, and
// returns what it printed and its exit code.
type Runner func(ctx context.Context, args []string, stdin string) (stdout, stderr []byte, code int, err error)

// Server is the agent's API on one node.
type Server struct {
	Node string
	Auth *Auth
	// Run runs svctrace for node-state and the repairs.
	Run Runner
	// Report is the agent's report (JSON).
	Report func() ([]byte, error)
	// BackupDir is where the repairs keep their backups.
	BackupDir string
	Log       *slog.Logger
	// Timeout bounds each request's work (0: 5 minutes).
	Timeout time.Duration
	// repairing is held while a repair or a rollback runs: one at a time
	// starts a process under the agent's memory limit; another is refused
	// at once (the node's lock would refuse it later anyway, after the
	// second process had read the whole node).
	repairing sync.Mutex
}

// maxBody bounds a request's body: the addresses of every Service of a
// large cluster fit.
const maxBody = 8 << 20

// Handler serves the API; every path authenticates and authorises first.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+PathNodeState, s.guard(VerbRead, s.nodeState))
	mux.Handle("GET "+PathReport, s.guard(VerbRead, s.report))
	mux.Handle("POST "+PathRules, s.guard(VerbRepair, s.rules))
	mux.Handle("POST "+PathRollback, s.guard(VerbRepair, s.rollback))
	mux.Handle("POST "+PathConntrack, s.guard(VerbRepair, s.conntrack))
	return mux
}

// Serve serves the API with TLS on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener, cert tls.Certificate) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the node API: %w", err)
	}
	return nil
}

type handler func(ctx context.Context, u User, body []byte) (int, any)

// guard authenticates the caller, asks the API server whether they may
// verb this node's nodes/svctrace, and only then runs h.
func (s *Server) guard(verb string, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timeout := s.Timeout
		if timeout == 0 {
			timeout = 5 * time.Minute
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		u, err := s.Auth.authenticate(ctx, r)
		if err == nil {
			u, err = s.Auth.impersonate(ctx, u, r)
		}
		if err != nil {
			code := http.StatusServiceUnavailable
			switch {
			case errors.Is(err, errUnauthenticated):
				code = http.StatusUnauthorized
			case errors.Is(err, errForbidden):
				code = http.StatusForbidden
			case errors.Is(err, errBadImpersonation):
				code = http.StatusBadRequest
			}
			s.logf("refused", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			writeJSON(w, code, Status{Message: err.Error()})
			return
		}
		ok, reason, err := s.Auth.authorize(ctx, u, verb, s.Node)
		if err != nil {
			s.logf("authorization failed", "path", r.URL.Path, "user", u.Name, "err", err)
			writeJSON(w, http.StatusServiceUnavailable, Status{Message: err.Error()})
			return
		}
		if !ok {
			msg := fmt.Sprintf("user %q may not %s %s/%s of node %s: that needs the %s ClusterRole (deploy/cli-rbac.yaml)", u.Name, verb, Resource, Subresource, s.Node, RoleFor(verb))
			if reason != "" {
				msg += " (" + reason + ")"
			}
			s.logf("forbidden", "path", r.URL.Path, "user", u.Name, "verb", verb)
			writeJSON(w, http.StatusForbidden, Status{Message: msg})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(body) > maxBody {
			writeJSON(w, http.StatusBadRequest, Status{Message: fmt.Sprintf("the request's body is unreadable or larger than %d bytes", maxBody)})
			return
		}
		code, v := h(ctx, u, body)
		if b, ok := v.([]byte); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(b)
			return
		}
		writeJSON(w, code, v)
	})
}

func (s *Server) nodeState(ctx context.Context, _ User, body []byte) (int, any) {
	var req NodeStateRequest
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return http.StatusBadRequest, Status{Message: "the node-state request: " + err.Error()}
		}
	}
	args, stdin, err := req.args(s.Node)
	if err != nil {
		return http.StatusBadRequest, Status{Message: err.Error()}
	}
	out, errOut, code, err := s.Run(ctx, args, stdin)
	if err != nil || code != 0 {
		return http.StatusInternalServerError, Status{Message: fmt.Sprintf("reading node %s: %s", s.Node, runFailure(errOut, code, err))}
	}
	return http.StatusOK, out
}

func (s *Server) report(context.Context, User, []byte) (int, any) {
	b, err := s.Report()
	if err != nil {
		return http.StatusInternalServerError, Status{Message: "the agent's report: " + err.Error()}
	}
	return http.StatusOK, b
}

func (s *Server) rules(ctx context.Context, u User, body []byte) (int, any) {
	var req RulesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, Status{Message: "the reconcile rules request: " + err.Error()}
	}
	args, err := req.args(s.Node, s.BackupDir, u.Name)
	if err != nil {
		return http.StatusBadRequest, Status{Message: err.Error()}
	}
	if !s.repairing.TryLock() {
		return http.StatusConflict, Status{Message: fmt.Sprintf("another repair or rollback of node %s is running through its agent: try again when it has finished", s.Node)}
	}
	defer s.repairing.Unlock()
	s.logf("reconcile rules --apply", "user", u.Name, "groups", u.Groups, "force", req.Force, "service", req.Service)
	if req.Force {
		s.logf("reconcile rules --apply --force: kube-proxy's check is skipped at the caller's word", "user", u.Name)
	}
	return s.runResult(ctx, args)
}

func (s *Server) rollback(ctx context.Context, u User, body []byte) (int, any) {
	var req RollbackRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, Status{Message: "the rollback request: " + err.Error()}
	}
	args, err := req.args(s.Node, s.BackupDir)
	if err != nil {
		return http.StatusBadRequest, Status{Message: err.Error()}
	}
	if !s.repairing.TryLock() {
		return http.StatusConflict, Status{Message: fmt.Sprintf("another repair or rollback of node %s is running through its agent: try again when it has finished", s.Node)}
	}
	defer s.repairing.Unlock()
	s.logf("reconcile rollback", "user", u.Name, "groups", u.Groups, "backup", req.Backup)
	return s.runResult(ctx, args)
}

func (s *Server) conntrack(ctx context.Context, u User, body []byte) (int, any) {
	var req ConntrackRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, Status{Message: "the reconcile conntrack request: " + err.Error()}
	}
	if !s.repairing.TryLock() {
		return http.StatusConflict, Status{Message: fmt.Sprintf("another repair of node %s is running through its agent: try again when it has finished", s.Node)}
	}
	defer s.repairing.Unlock()
	s.logf("reconcile conntrack --apply", "user", u.Name, "groups", u.Groups)
	return s.runResult(ctx, req.args(s.Node))
}

func (s *Server) runResult(ctx context.Context, args []string) (int, any) {
	out, errOut, code, err := s.Run(ctx, args, "")
	if err != nil {
		return http.StatusInternalServerError, Status{Message: fmt.Sprintf("svctrace %s: %v", strings.Join(args[:2], " "), err)}
	}
	return http.StatusOK, RunResult{Stdout: string(out), Stderr: string(errOut), ExitCode: code}
}

func runFailure(stderr []byte, code int, err error) string {
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(stderr)), "error: "))
	switch {
	case err != nil && msg != "":
		return err.Error() + ": " + msg
	case err != nil:
		return err.Error()
	case msg != "":
		return msg
	}
	return fmt.Sprintf("exit code %d", code)
}

func (s *Server) logf(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Info(msg, append([]any{"node", s.Node}, args...)...)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
