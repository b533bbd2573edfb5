package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/svctrace/svctrace/agent"
)

const (
	// maxScrapes is how many scrapes are served at once; a further one
	// waits up to scrapeWait for its turn, then gets HTTP 503.
	maxScrapes = 4
	scrapeWait = 5 * time.Second
	// retryAfter is the Retry-After of that 503, in seconds.
	retryAfter = "1"
)

// scrapes serves /metrics. The findings of a node with many Services are
// most of a scrape and change only when a check succeeds: they are
// gathered and encoded once per successful check and format, and each
// scrape writes those bytes, with the few dozen series of the agent's
// status, the Go runtime and the process gathered afresh. At most
// maxScrapes are served at once, and at most that many gzip writers kept.
type scrapes struct {
	c       *Collector
	runtime *prometheus.Registry
	errs    *prometheus.CounterVec
	wait    time.Duration
	formats []expfmt.Format // offered, by preference
	turns   chan struct{}
	gzips   chan *gzip.Writer

	mu        sync.Mutex
	good      *agent.Check                       // the check the cache is of
	cached    map[expfmt.Format]*encodedFamilies // by format
	encodings int                                // fills of the cache, for tests
}

// encodedFamilies are metric families encoded in one format, one after
// the other, in the order of their names.
type encodedFamilies struct {
	body  []byte
	names []string
	ends  []int // where each family's bytes end in body
}

func newScrapes(c *Collector, wait time.Duration) *scrapes {
	reg := prometheus.NewRegistry()
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promhttp_metric_handler_errors_total",
		Help: "Errors of the metrics handler, by cause (gathering or encoding)."}, []string{"cause"})
	errs.WithLabelValues("gathering")
	errs.WithLabelValues("encoding")
	reg.MustRegister(errs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &scrapes{c: c, runtime: reg, errs: errs, wait: wait, formats: []expfmt.Format{expfmt.FmtProtoDelim, expfmt.FmtText},
		turns: make(chan struct{}, maxScrapes), gzips: make(chan *gzip.Writer, maxScrapes)}
}

// handler is the /metrics handler, counted by promhttp's own metrics.
func (m *scrapes) handler() http.Handler {
	return promhttp.InstrumentMetricHandler(m.runtime, m)
}

func (m *scrapes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.take(r.Context()) {
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, fmt.Sprintf("%d scrapes are being served; try again", maxScrapes), http.StatusServiceUnavailable)
		return
	}
	defer func() { <-m.turns }()
	s := m.c.status()
	format := expfmt.NegotiateAccept(r.Header, m.formats...)
	var findings *encodedFamilies
	if s.Good != nil {
		findings = m.findings(s.Good, format)
	}
	live, err := prometheus.Gatherers{m.runtime, statusGatherer{m.c, s}}.Gather()
	if err != nil {
		// What could be gathered is served, as promhttp's ContinueOnError.
		m.errs.WithLabelValues("gathering").Inc()
	}
	w.Header().Set("Content-Type", string(format))
	out := io.Writer(w)
	if acceptsGzip(r) {
		gz := m.gzipWriter(w)
		defer m.putGzip(gz)
		w.Header().Set("Content-Encoding", "gzip")
		out = gz
	}
	if err := writeMerged(out, format, live, findings); err != nil {
		m.errs.WithLabelValues("encoding").Inc()
	}
}

// encoded is how many times findings were encoded.
func (m *scrapes) encoded() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.encodings
}

// take waits for a turn to serve a scrape, up to m.wait.
func (m *scrapes) take(ctx context.Context) bool {
	select {
	case m.turns <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(m.wait)
	defer t.Stop()
	select {
	case m.turns <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// findings are the encoded findings of good in format: from the cache, or
// gathered and encoded now (once, whoever else asks meanwhile).
func (m *scrapes) findings(good *agent.Check, format expfmt.Format) *encodedFamilies {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.good != good {
		if m.good != nil && good.At.Before(m.good.At) {
			// A scrape that read the status before a newer check was
			// cached: serve it without replacing the newer.
			return m.encode(good, format)
		}
		m.good, m.cached = good, map[expfmt.Format]*encodedFamilies{}
	}
	if e, ok := m.cached[format]; ok {
		return e
	}
	e := m.encode(good, format)
	m.cached[format] = e
	return e
}

// encode gathers the findings of good and encodes them in format.
func (m *scrapes) encode(good *agent.Check, format expfmt.Format) *encodedFamilies {
	m.encodings++
	reg := prometheus.NewRegistry()
	reg.MustRegister(findingsCollector{m.c, good})
	mfs, err := reg.Gather()
	if err != nil {
		m.errs.WithLabelValues("gathering").Inc()
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, format)
	e := &encodedFamilies{}
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			m.errs.WithLabelValues("encoding").Inc()
			b.Truncate(lastEnd(e))
			continue
		}
		e.names = append(e.names, mf.GetName())
		e.ends = append(e.ends, b.Len())
	}
	// No Close: the scrape's encoder ends the exposition (OpenMetrics'
	// "# EOF"), after the families gathered afresh.
	e.body = bytes.Clone(b.Bytes())
	return e
}

func lastEnd(e *encodedFamilies) int {
	if len(e.ends) == 0 {
		return 0
	}
	return e.ends[len(e.ends)-1]
}

// writeMerged writes the families gathered afresh and the encoded ones in
// the order of their names, as one registry would, and ends the
// exposition.
func writeMerged(w io.Writer, format expfmt.Format, live []*dto.MetricFamily, encoded *encodedFamilies) error {
	enc := expfmt.NewEncoder(w, format)
	i, start := 0, 0
	writeUpTo := func(name string, all bool) error {
		for ; encoded != nil && i < len(encoded.names) && (all || encoded.names[i] < name); i++ {
			if _, err := w.Write(encoded.body[start:encoded.ends[i]]); err != nil {
				return fmt.Errorf("writing %s: %w", encoded.names[i], err)
			}
			start = encoded.ends[i]
		}
		return nil
	}
	for _, mf := range live {
		if err := writeUpTo(mf.GetName(), false); err != nil {
			return err
		}
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encoding %s: %w", mf.GetName(), err)
		}
	}
	if err := writeUpTo("", true); err != nil {
		return err
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("ending the exposition: %w", err)
		}
	}
	return nil
}

// acceptsGzip says whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(h, ",") {
			name, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				v, err := strconv.ParseFloat(q, 64)
				return err == nil && v > 0
			}
			return true
		}
	}
	return false
}

// gzipWriter is a kept gzip writer, or a new one, writing to w.
func (m *scrapes) gzipWriter(w io.Writer) *gzip.Writer {
	select {
	case gz := <-m.gzips:
		gz.Reset(w)
		return gz
	default:
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the level is valid
		return gz
	}
}

// putGzip ends the gzip stream and keeps the writer for another scrape.
func (m *scrapes) putGzip(gz *gzip.Writer) {
	_ = gz.Close() // the response is written; its client went away
	select {
	case m.gzips <- gz:
	default:
	}
}

// statusGatherer gathers the metrics of one status but its findings.
type statusGatherer struct {
	c *Collector
	s *agent.Status
}

func (g statusGatherer) Gather() ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectFunc(func(ch chan<- prometheus.Metric) { g.c.collectStatus(ch, g.s) }))
	return reg.Gather()
}

// findingsCollector collects the findings of one check.
type findingsCollector struct {
	c    *Collector
	good *agent.Check
}

func (f findingsCollector) Describe(chan<- *prometheus.Desc) {}

func (f findingsCollector) Collect(ch chan<- prometheus.Metric) { f.c.collectFindings(ch, f.good) }

// collectFunc is an unchecked collector (it describes nothing).
type collectFunc func(chan<- prometheus.Metric)

func (f collectFunc) Describe(chan<- *prometheus.Desc) {}

func (f collectFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }
