package exporter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/svctrace/svctrace/agent"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHandlerHealth: /livez answers at once; /readyz only once the objects
// are listed and a check succeeded, saying why not before; the landing
// page links the endpoints.
func TestHandlerHealth(t *testing.T) {
	var cur atomic.Pointer[agent.Status]
	cur.Store(&agent.Status{Node: "node1"})
	srv := httptest.NewServer(Handler(func() *agent.Status { return cur.Load() }, "v0.1.0", Options{}))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/livez"); code != 200 || body != "ok\n" {
		t.Errorf("/livez: %d %q", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "not listed") {
		t.Errorf("/readyz before the lists: %d %q", code, body)
	}
	failed := sampleStatus()
	failed.Good = nil
	cur.Store(failed)
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "boom") {
		t.Errorf("/readyz after a failed check: %d %q", code, body)
	}
	cur.Store(sampleStatus())
	if code, body := get(t, srv.URL+"/readyz"); code != 200 || !strings.HasPrefix(body, "ok") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	if code, body := get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, `href="metrics"`) || !strings.Contains(body, "node1") {
		t.Errorf("/: %d %q", code, body)
	}
	if code, _ := get(t, srv.URL+"/nothing"); code != 404 {
		t.Errorf("/nothing: %d", code)
	}
}

// TestHandlerConcurrentScrapes: a hundred scrapes at once all get the
// metrics.
func TestHandlerConcurrentScrapes(t *testing.T) {
	srv := httptest.NewServer(Handler(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{}))
	defer srv.Close()
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range 100 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				bad.Add(1)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "svctrace_drift_findings{finding=\"MissingEndpoint\"} 2") {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of 100 concurrent scrapes failed", n)
	}
}
