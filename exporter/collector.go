// Package exporter serves the node agent's findings as Prometheus metrics,
// with its health endpoints. Every scrape reads the agent's last check; it
// never reads the kernel itself, so a scrape costs nothing and a failing
// read never fails it (svctrace_collector_success says which part failed).
package exporter

import (
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svctrace/svctrace/agent"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// Collector makes the agent's metrics from its status at each scrape.
type Collector struct {
	status  func() *agent.Status
	version string
	// endpoints adds the findings per endpoint (opt-in: one series per
	// endpoint with findings).
	endpoints bool
	d         descs
}

// Options tune the exporter.
type Options struct {
	// EndpointLabels adds svctrace_endpoint_drift_findings, labelled by
	// endpoint.
	EndpointLabels bool
}

type descs struct {
	build, staleAfter, checkSuccess, checkTime, checkDuration, goodTime, checks, failures,
	collectorSuccess, collectorDuration, frontends, drift, pending, serviceDrift, staleConntrack,
	kpInfo, kpLastSync, kpLag, kpStalled, kpAbsent, watchErrors, watchErrorTime, apiReachable, endpointDrift *prometheus.Desc
}

// NewCollector returns a collector of the agent's status; version is
// svctrace's.
func NewCollector(status func() *agent.Status, version string, o Options) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("svctrace_"+name, help, labels, nil)
	}
	return &Collector{status: status, version: version, endpoints: o.EndpointLabels, d: descs{
		build:             d("build_info", "svctrace's version, always 1.", "version"),
		staleAfter:        d("check_stale_after_seconds", "How long the agent may go without ending a check before /livez fails: three --interval and --check-timeout."),
		checkSuccess:      d("last_check_success", "Whether the last check of the node succeeded (1) or failed (0)."),
		checkTime:         d("last_check_timestamp_seconds", "When the last check of the node started, in seconds since the epoch."),
		checkDuration:     d("last_check_duration_seconds", "How long the last check of the node took."),
		goodTime:          d("last_successful_check_timestamp_seconds", "When the last successful check started: the findings below are from it."),
		checks:            d("checks_total", "Checks of the node made."),
		failures:          d("check_failures_total", "Checks of the node that failed."),
		collectorSuccess:  d("collector_success", "Whether the last check read this part of the node's state (1) or failed to (0).", "collector"),
		collectorDuration: d("collector_duration_seconds", "How long the last check took to read this part of the node's state.", "collector"),
		frontends:         d("frontends_checked", "Service frontends checked on the node by the last successful check."),
		drift:             d("drift_findings", "Findings that outlived kube-proxy's sync of the changes before them, by finding type.", "finding"),
		pending:           d("pending_findings", "Differences that still wait for kube-proxy's next sync (its ordinary lag), by finding type.", "finding"),
		serviceDrift:      d("service_drift_findings", "Findings of one Service, shown only for Services that have some.", "namespace", "service", "finding"),
		staleConntrack:    d("stale_conntrack_entries", "Conntrack entries that send clients to a backend that no longer serves the Service."),
		kpInfo:            d("kube_proxy_info", "kube-proxy's mode, version and iptables backend, always 1.", "mode", "version", "iptables_backend"),
		kpLastSync:        d("kube_proxy_last_sync_timestamp_seconds", "When kube-proxy's last successful sync ended, as its metrics tell."),
		kpLag:             d("kube_proxy_sync_lag_seconds", "How long kube-proxy has gone without a successful sync while changes wait (0: none waits)."),
		kpStalled:         d("kube_proxy_sync_stalled", "Whether kube-proxy has gone longer than allowed without syncing waiting changes."),
		kpAbsent:          d("kube_proxy_absent", "Whether kube-proxy does not answer on a node where its DaemonSet runs it."),
		watchErrors:       d("api_watch_errors_total", "Errors of the agent's watches of the API server."),
		watchErrorTime:    d("api_last_watch_error_timestamp_seconds", "When a watch of the API server last failed with an error it does not retry at once."),
		apiReachable:      d("api_reachable", "Whether the API server answered at the last check (0: the node was checked against the objects last listed)."),
		endpointDrift:     d("endpoint_drift_findings", "Findings about one endpoint (missing, stale, stale conntrack entries), only with --endpoint-labels.", "namespace", "service", "endpoint", "finding"),
	}}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, x := range []*prometheus.Desc{d.build, d.staleAfter, d.checkSuccess, d.checkTime, d.checkDuration, d.goodTime, d.checks, d.failures,
		d.collectorSuccess, d.collectorDuration, d.frontends, d.drift, d.pending, d.serviceDrift, d.staleConntrack,
		d.kpInfo, d.kpLastSync, d.kpLag, d.kpStalled, d.kpAbsent, d.watchErrors, d.watchErrorTime, d.apiReachable, d.endpointDrift} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	c.collectStatus(ch, s)
	if s.Good != nil {
		c.collectFindings(ch, s.Good)
	}
}

// gauges sends constant gauges to ch.
func gauges(ch chan<- prometheus.Metric) func(desc *prometheus.Desc, v float64, labels ...string) {
	return func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
}

// collectStatus sends the metrics of the agent and its last check: a few
// dozen series, which change with every check and every watch error.
func (c *Collector) collectStatus(ch chan<- prometheus.Metric, s *agent.Status) {
	d := c.d
	gauge := gauges(ch)
	gauge(d.build, 1, c.version)
	if s.StaleAfter > 0 {
		gauge(d.staleAfter, s.StaleAfter.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(d.checks, prometheus.CounterValue, float64(s.Checks))
	ch <- prometheus.MustNewConstMetric(d.failures, prometheus.CounterValue, float64(s.Failed))
	ch <- prometheus.MustNewConstMetric(d.watchErrors, prometheus.CounterValue, float64(s.WatchErrors))
	if !s.LastWatchError.IsZero() {
		gauge(d.watchErrorTime, seconds(s.LastWatchError))
	}
	if last := s.Last; last != nil {
		gauge(d.checkSuccess, boolValue(last.Err == nil))
		gauge(d.checkTime, seconds(last.At))
		gauge(d.checkDuration, last.Duration.Seconds())
		gauge(d.apiReachable, boolValue(last.APIErr == nil))
		for _, r := range last.Reads {
			gauge(d.collectorSuccess, boolValue(r.Err == nil), r.Collector)
			gauge(d.collectorDuration, r.Duration.Seconds(), r.Collector)
		}
		kp := last.KubeProxy
		gauge(d.collectorSuccess, boolValue(kp.MetricsErr == nil), "kube-proxy")
		gauge(d.collectorDuration, kp.MetricsDuration.Seconds(), "kube-proxy")
		gauge(d.kpAbsent, boolValue(kp.Absent))
		if kp.MetricsErr == nil {
			if !kp.LastSync.IsZero() {
				gauge(d.kpLastSync, seconds(kp.LastSync))
			}
			gauge(d.kpLag, kp.Lag.Seconds())
			gauge(d.kpStalled, boolValue(kp.Stalled))
		}
	}
}

// collectFindings sends the metrics of the last successful check: its
// findings, one series per Service (and endpoint) with some, as many as
// the node has Services. They change only when a check succeeds.
func (c *Collector) collectFindings(ch chan<- prometheus.Metric, good *agent.Check) {
	d := c.d
	gauge := gauges(ch)
	gauge(d.goodTime, seconds(good.At))
	gauge(d.frontends, float64(good.Frontends))
	kp := good.KubeProxy
	gauge(d.kpInfo, 1, kp.Mode, kp.Version, kp.Backend)
	drift, pending := countByType(good.Drift), countByType(good.Pending)
	for _, t := range findingTypes(drift, pending) {
		gauge(d.drift, float64(drift[t]), t)
		gauge(d.pending, float64(pending[t]), t)
	}
	gauge(d.staleConntrack, float64(drift[behavior.StaleConntrack]))
	for _, sf := range byService(good.Drift) {
		gauge(d.serviceDrift, float64(sf.n), sf.namespace, sf.service, sf.finding)
	}
	if c.endpoints {
		for _, ef := range byEndpoint(good.Drift) {
			gauge(d.endpointDrift, float64(ef.n), ef.namespace, ef.service, ef.endpoint, ef.finding)
		}
	}
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func countByType(fs []behavior.Finding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.Type]++
	}
	return m
}

// findingTypes are the stable finding types, then any other seen, sorted:
// each is shown, with its zero, so that sums and alerts see every one.
func findingTypes(counts ...map[string]int) []string {
	out := append([]string(nil), behavior.FindingTypes...)
	known := map[string]bool{}
	for _, t := range out {
		known[t] = true
	}
	var extra []string
	for _, m := range counts {
		for t := range m {
			if !known[t] {
				known[t] = true
				extra = append(extra, t)
			}
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

type serviceFindings struct {
	namespace, service, finding string
	n                           int
}

// byService counts findings by Service and type; a finding of no Service
// is counted by type alone.
func byService(fs []behavior.Finding) []serviceFindings {
	idx := map[[3]string]int{}
	var out []serviceFindings
	for _, f := range fs {
		name := model.ParseServicePortName(f.Service).Service()
		ns, svc, ok := strings.Cut(name, "/")
		if !ok {
			continue
		}
		k := [3]string{ns, svc, f.Type}
		if i, ok := idx[k]; ok {
			out[i].n++
			continue
		}
		idx[k] = len(out)
		out = append(out, serviceFindings{namespace: ns, service: svc, finding: f.Type, n: 1})
	}
	return out
}

type endpointFindings struct {
	namespace, service, endpoint, finding string
	n                                     int
}

// byEndpoint counts the findings that name an endpoint, by Service,
// endpoint and type.
func byEndpoint(fs []behavior.Finding) []endpointFindings {
	idx := map[[4]string]int{}
	var out []endpointFindings
	for _, f := range fs {
		name := model.ParseServicePortName(f.Service).Service()
		ns, svc, ok := strings.Cut(name, "/")
		if !ok || f.Endpoint == "" {
			continue
		}
		k := [4]string{ns, svc, f.Endpoint, f.Type}
		if i, ok := idx[k]; ok {
			out[i].n++
			continue
		}
		idx[k] = len(out)
		out = append(out, endpointFindings{namespace: ns, service: svc, endpoint: f.Endpoint, finding: f.Type, n: 1})
	}
	return out
}
