package exporter

import (
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svctrace/svctrace/agent"
)

// maxScrapes is how many scrapes are served at once; more get HTTP 503.
const maxScrapes = 256

// Handler serves the agent's endpoints: /metrics, /livez, /readyz (and
// /healthz, as /livez), and a landing page at /.
func Handler(status func() *agent.Status, version string, o Options) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(status, version, o),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(reg,
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: maxScrapes})))
	live := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }
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
		return fmt.Sprintf("not ready: no check has succeeded; the last failed: %v", s.Last.Err)
	case s.Good == nil:
		return "not ready: the first check runs"
	}
	return ""
}
