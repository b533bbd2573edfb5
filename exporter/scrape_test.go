package exporter

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/behavior"
)

// bigStatus is the status of a node of n Services, each with drift on one
// endpoint: with endpoint labels, two series per Service.
func bigStatus(n int) *agent.Status {
	good := &agent.Check{At: t0, Duration: 8 * time.Second, Frontends: 2 * n,
		KubeProxy: agent.KubeProxy{Mode: "iptables", Version: "v1.36.3", Backend: "legacy"}}
	for i := range n {
		good.Drift = append(good.Drift, behavior.Finding{Type: behavior.MissingEndpoint,
			Service:  fmt.Sprintf("team-%02d/service-%05d:http", i%50, i),
			Endpoint: fmt.Sprintf("10.244.%d.%d:8080", i/250, i%250)})
	}
	return &agent.Status{Node: "node1", Synced: true, Last: good, Good: good, Checks: 1}
}

// scrapeBytes scrapes url as Prometheus does (gzip) and returns the size
// of the exposition.
func scrapeBytes(c *http.Client, url string) (int64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return n, err
}

// TestScrapesOfOneCheckEncodeOnce: 64 scrapes at once of a 10,000-Service
// node with drift everywhere encode its findings once, and each costs a
// small part of the exposition's size in allocations (it was twelve times
// that size, each scrape building and encoding every series). A new check
// is encoded once more.
func TestScrapesOfOneCheckEncodeOnce(t *testing.T) {
	var cur atomic.Pointer[agent.Status]
	cur.Store(bigStatus(10000))
	m := newScrapes(NewCollector(func() *agent.Status { return cur.Load() }, "v0.1.0", Options{EndpointLabels: true}), time.Minute)
	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	size, err := scrapeBytes(client, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range 64 {
		wg.Go(func() {
			if n, err := scrapeBytes(client, srv.URL); err != nil || n < size*9/10 {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of 64 scrapes failed or were short", n)
	}
	perScrape := (after.TotalAlloc - before.TotalAlloc) / 64
	t.Logf("exposition %d bytes, %d bytes allocated per scrape", size, perScrape)
	if perScrape > uint64(size)/4 {
		t.Errorf("each scrape allocates %d bytes, over a quarter of the %d-byte exposition", perScrape, size)
	}
	if got := m.encoded(); got != 1 {
		t.Errorf("the findings of one check were encoded %d times", got)
	}
	cur.Store(bigStatus(10))
	if _, err := scrapeBytes(client, srv.URL); err != nil {
		t.Fatal(err)
	}
	if got := m.encoded(); got != 2 {
		t.Errorf("%d encodings after a second check, want 2", got)
	}
}

const acceptProto = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// TestScrapeFormats: in the text and the protobuf format, gzipped or not,
// a scrape holds every family once, in order, and the svctrace families
// are what the collector makes, through the cache or not.
func TestScrapeFormats(t *testing.T) {
	c := NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{EndpointLabels: true})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	direct, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newScrapes(c, time.Second).handler())
	defer srv.Close()
	for _, accept := range []string{"", acceptProto} {
		for _, encoding := range []string{"identity", "gzip"} {
			for round := range 2 { // the first fills the cache
				name := fmt.Sprintf("accept %q, %s, scrape %d", accept, encoding, round+1)
				mfs := scrapeFamilies(t, srv.URL, accept, encoding)
				var names, own []string
				got := map[string]string{}
				for _, mf := range mfs {
					names = append(names, mf.GetName())
					if strings.HasPrefix(mf.GetName(), "svctrace_") {
						own = append(own, mf.GetName())
						got[mf.GetName()] = exposition(mf)
					}
				}
				if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
					t.Errorf("%s: families out of order or twice: %v", name, names)
				}
				for _, want := range []string{"go_goroutines", "process_start_time_seconds", "promhttp_metric_handler_requests_total"} {
					if !slices.Contains(names, want) {
						t.Errorf("%s: no %s", name, want)
					}
				}
				if len(own) != len(direct) {
					t.Errorf("%s: %d svctrace families, the collector makes %d", name, len(own), len(direct))
				}
				for _, mf := range direct {
					if g := got[mf.GetName()]; g != exposition(mf) {
						t.Errorf("%s: %s is\n%s\nwant\n%s", name, mf.GetName(), g, exposition(mf))
					}
				}
			}
		}
	}
}

// scrapeFamilies scrapes url with the Accept and Accept-Encoding given and
// decodes the families in the order sent.
func scrapeFamilies(t *testing.T, url, accept, encoding string) []*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" != (encoding == "gzip") {
		t.Fatalf("Accept-Encoding %s: Content-Encoding %q", encoding, resp.Header.Get("Content-Encoding"))
	}
	if encoding == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if (format.FormatType() == expfmt.TypeProtoDelim) != (accept == acceptProto) {
		t.Fatalf("Accept %q: Content-Type %q", accept, resp.Header.Get("Content-Type"))
	}
	if format.FormatType() == expfmt.TypeTextPlain {
		// The text decoder gives a map: read the order from the text.
		var order []string
		for line := range strings.Lines(string(raw)) {
			if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
				order = append(order, strings.Fields(rest)[0])
			}
		}
		mfs := decodeAll(t, raw, format)
		slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int {
			return slices.Index(order, a.GetName()) - slices.Index(order, b.GetName())
		})
		if len(order) != len(mfs) {
			t.Errorf("%d TYPE lines, %d families", len(order), len(mfs))
		}
		return mfs
	}
	return decodeAll(t, raw, format)
}

func decodeAll(t *testing.T, raw []byte, format expfmt.Format) []*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(raw), format)
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding the scrape (%s): %v", format, err)
		}
		out = append(out, mf)
	}
}

// TestWriteMergedOpenMetrics: an OpenMetrics exposition of cached and
// fresh families ends with one "# EOF", after both.
func TestWriteMergedOpenMetrics(t *testing.T) {
	format := expfmt.NewFormat(expfmt.TypeOpenMetrics)
	m := newScrapes(NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{}), time.Second)
	cached := m.findings(sampleStatus().Good, format)
	live, err := statusGatherer{m.c, sampleStatus()}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeMerged(&b, format, live, cached); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if strings.Count(text, "# EOF") != 1 || !strings.HasSuffix(text, "# EOF\n") {
		t.Errorf("the exposition does not end with one # EOF:\n%s", text)
	}
	if !strings.Contains(text, `svctrace_drift_findings{finding="MissingEndpoint"} 2`) || !strings.Contains(text, "svctrace_checks_total 7") {
		t.Errorf("a cached or fresh family is missing:\n%s", text)
	}
}

// heldWriter is a response whose writes wait until release is closed.
type heldWriter struct {
	header  http.Header
	started chan<- struct{}
	once    sync.Once
	release <-chan struct{}
}

func (w *heldWriter) Header() http.Header { return w.header }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.started <- struct{}{} })
	<-w.release
	return len(p), nil
}

// TestScrapeLimit: while maxScrapes scrapes are being written, a further
// one waits its turn, then gets HTTP 503 with a Retry-After; once they end,
// scrapes are served again.
func TestScrapeLimit(t *testing.T) {
	m := newScrapes(NewCollector(func() *agent.Status { return sampleStatus() }, "v0.1.0", Options{}), 10*time.Millisecond)
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for range maxScrapes {
		wg.Go(func() {
			w := &heldWriter{header: http.Header{}, started: started, release: release}
			m.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		})
	}
	for range maxScrapes {
		<-started
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a scrape beyond %d at once: HTTP %d, Retry-After %q", maxScrapes, rec.Code, rec.Header().Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	rec = httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "svctrace_checks_total 7") {
		t.Errorf("a scrape after the others ended: HTTP %d\n%s", rec.Code, rec.Body.String())
	}
}
