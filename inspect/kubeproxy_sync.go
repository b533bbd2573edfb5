package inspect

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// KubeProxySync is kube-proxy's own account of its rule syncs for one IP
// family, as its /metrics tells it.
type KubeProxySync struct {
	// Version is kube-proxy's version (kubernetes_build_info), if shown.
	Version string
	// LastSync is when its last successful sync ended
	// (kubeproxy_sync_proxy_rules_last_timestamp_seconds); zero before
	// the first.
	LastSync time.Time
	// LastQueued is when it last queued a change for a sync
	// (kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds).
	LastQueued time.Time
	// Syncs and SyncSeconds are the count and the sum of its sync
	// duration histogram (kubeproxy_sync_proxy_rules_duration_seconds):
	// between two reads they tell how many syncs ended, and how long
	// they took together.
	Syncs       uint64
	SyncSeconds float64
	// RestoreFailures, PartialRestoreFailures and NFTablesFailures count
	// the syncs whose write to the kernel failed since kube-proxy started
	// (iptables-restore, a partial one, nft).
	RestoreFailures, PartialRestoreFailures, NFTablesFailures uint64
}

// Pending reports whether a change waits for a sync: queued after the
// last sync ended.
func (s KubeProxySync) Pending() bool { return s.LastQueued.After(s.LastSync) }

// ReadKubeProxySync reads the sync metrics of the kube-proxy serving its
// metrics at addr (host:port), for family ("IPv4" or "IPv6"; kube-proxy
// labels them ip_family since 1.28, and a series without the label is
// taken for any family).
func ReadKubeProxySync(ctx context.Context, addr, family string) (KubeProxySync, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	body, err := get(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return KubeProxySync{}, fmt.Errorf("reading kube-proxy /metrics at %s: %w", addr, err)
	}
	s, err := ParseKubeProxySync(body, family)
	if err != nil {
		return s, fmt.Errorf("kube-proxy /metrics at %s: %w", addr, err)
	}
	return s, nil
}

// ParseKubeProxySync reads the sync metrics of family from kube-proxy's
// /metrics text. Metrics absent (a kube-proxy that has not synced yet)
// leave their fields zero; text that is not the Prometheus format is an
// error.
func ParseKubeProxySync(text []byte, family string) (KubeProxySync, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return KubeProxySync{}, fmt.Errorf("not Prometheus text: %w", err)
	}
	var s KubeProxySync
	if mf := mfs["kubernetes_build_info"]; mf != nil && len(mf.Metric) > 0 {
		s.Version = labelValue(mf.Metric[0], "git_version")
	}
	if m := familyMetric(mfs["kubeproxy_sync_proxy_rules_last_timestamp_seconds"], family); m != nil {
		s.LastSync = unixTime(gaugeValue(m))
	}
	if m := familyMetric(mfs["kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"], family); m != nil {
		s.LastQueued = unixTime(gaugeValue(m))
	}
	if m := familyMetric(mfs["kubeproxy_sync_proxy_rules_duration_seconds"], family); m != nil {
		s.Syncs, s.SyncSeconds = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	for name, to := range map[string]*uint64{
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total":         &s.RestoreFailures,
		"kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total": &s.PartialRestoreFailures,
		"kubeproxy_sync_proxy_rules_nftables_sync_failures_total":            &s.NFTablesFailures,
	} {
		if m := familyMetric(mfs[name], family); m != nil {
			*to = uint64(counterValue(m))
		}
	}
	return s, nil
}

// familyMetric is the series of mf for family: the one labelled with it,
// else one without an ip_family label.
func familyMetric(mf *dto.MetricFamily, family string) *dto.Metric {
	if mf == nil {
		return nil
	}
	var unlabelled *dto.Metric
	for _, m := range mf.Metric {
		switch labelValue(m, "ip_family") {
		case family:
			return m
		case "":
			unlabelled = m
		}
	}
	return unlabelled
}

// counterValue is a counter's value (untyped without # TYPE lines).
func counterValue(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// gaugeValue is a gauge's value; text without # TYPE lines makes it
// untyped.
func gaugeValue(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// unixTime is a timestamp in seconds; 0 (never) is the zero time.
func unixTime(sec float64) time.Time {
	if sec <= 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return time.Time{}
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9))
}
