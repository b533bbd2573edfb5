package exporter

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	code, body := get(t, srv.URL+"/readyz")
	if code != 503 || !strings.Contains(body, "the last failed at 2026-11-24T12:01:00Z") {
		t.Errorf("/readyz after a failed check: %d %q", code, body)
	}
	// The error is the agent's log's: whoever reaches the port learns
	// nothing of the node from it.
	for _, secret := range []string{"boom", "reading the kernel", "connection refused"} {
		if strings.Contains(body, secret) {
			t.Errorf("/readyz tells the check's error (%q): %q", secret, body)
		}
	}
	if _, page := get(t, srv.URL+"/"); strings.Contains(page, "boom") {
		t.Errorf("the landing page tells the check's error: %q", page)
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

// TestHandlerLivez: /livez fails once the agent has finished no check,
// failed or not, for longer than its bound; a failed check that ended
// recently is live (readiness tells it), and so is an agent that waits
// for its first list of the objects.
func TestHandlerLivez(t *testing.T) {
	var cur atomic.Pointer[agent.Status]
	srv := httptest.NewServer(Handler(func() *agent.Status { return cur.Load() }, "v0.1.0", Options{}))
	defer srv.Close()
	now := time.Now()
	cur.Store(&agent.Status{Node: "node1", Started: now.Add(-time.Hour), StaleAfter: 5 * time.Minute})
	if code, body := get(t, srv.URL+"/livez"); code != 200 {
		t.Errorf("/livez while the objects are listed: %d %q", code, body)
	}
	failed := &agent.Check{At: now.Add(-time.Minute), Duration: 2 * time.Second, Err: errors.New("boom")}
	cur.Store(&agent.Status{Node: "node1", Synced: true, SyncedAt: now.Add(-time.Hour), StaleAfter: 5 * time.Minute, Last: failed})
	if code, body := get(t, srv.URL+"/livez"); code != 200 {
		t.Errorf("/livez a minute after a failed check: %d %q", code, body)
	}
	stuck := &agent.Check{At: now.Add(-10*time.Minute - time.Second), Duration: time.Second}
	cur.Store(&agent.Status{Node: "node1", Synced: true, StaleAfter: 5 * time.Minute, Last: stuck, Good: stuck})
	for _, path := range []string{"/livez", "/healthz"} {
		if code, body := get(t, srv.URL+path); code != 503 || !strings.Contains(body, "no check has ended for 10m") {
			t.Errorf("%s 10 minutes after the last check ended: %d %q", path, code, body)
		}
	}
	cur.Store(&agent.Status{Node: "node1", Synced: true, SyncedAt: now.Add(-6 * time.Minute), StaleAfter: 5 * time.Minute})
	if code, body := get(t, srv.URL+"/livez"); code != 503 {
		t.Errorf("/livez with no check 6 minutes after the list: %d %q", code, body)
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
