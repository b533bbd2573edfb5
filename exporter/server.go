package exporter

import (
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/svctrace/svctrace/agent"
)

// Handler serves the agent's endpoints: /metrics, /livez (and /healthz, as
// /livez), /readyz, and a landing page at /. Their bodies say why the
// agent is not live or ready in general terms only: the errors themselves
// are in the agent's log, not for whoever reaches the port.
func Handler(status func() *agent.Status, version string, o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", newScrapes(NewCollector(status, version, o), scrapeWait).handler())
	live := func(w http.ResponseWriter, _ *http.Request) {
		if msg := notLive(status(), time.Now()); msg != "" {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		s := status()
		if msg := notReady(s); msg != "" {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok: last successful check %s ago\n", time.Since(s.Good.At).Round(time.Second))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		s := status()
		state := "ready"
		if msg := notReady(s); msg != "" {
			state = msg
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><title>svctrace agent</title></head>
<body>
<h1>svctrace agent on %s</h1>
<p>%s</p>
<ul>
<li><a href="metrics">metrics</a></li>
<li><a href="readyz">readyz</a></li>
<li><a href="livez">livez</a></li>
</ul>
</body></html>
`, html.EscapeString(s.Node), html.EscapeString(state))
	})
	return mux
}

// notReady says why the agent is not ready, or "" when it is.
func notReady(s *agent.Status) string {
	switch {
	case !s.Synced:
		return "not ready: the objects are not listed yet"
	case s.Good == nil && s.Last != nil:
		return fmt.Sprintf("not ready: no successful check yet; the last failed at %s (the agent's log says why)",
			s.Last.At.UTC().Format(time.RFC3339))
	case s.Good == nil:
		return "not ready: no successful check yet; the first runs"
	}
	return ""
}

// notLive says why the agent is stuck at now, or "" when it is not: it
// has finished no check, failed or not, for longer than its bound (three
// check intervals and the check's deadline).
func notLive(s *agent.Status, now time.Time) string {
	if d, stale := s.Stale(now); stale {
		return fmt.Sprintf("not live: no check has ended for %s, more than %s", d.Round(time.Second), s.StaleAfter)
	}
	return ""
}
