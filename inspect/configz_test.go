package inspect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// kubeProxyServer serves /configz and /metrics as kube-proxy's metrics
// server does; a handler left empty answers 404.
func kubeProxyServer(t *testing.T, configz, metrics string) string {
	t.Helper()
	mux := http.NewServeMux()
	if configz != "" {
		mux.HandleFunc("/configz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(configz)) })
	}
	if metrics != "" {
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(metrics)) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

const testConfigz = `{"kubeproxy.config.k8s.io":{"mode":"nftables","clusterCIDR":"10.244.0.0/16,fd00:10:244::/56","iptables":{"masqueradeBit":14}}}`

func TestProxyConfigFromConfigz(t *testing.T) {
	ctx := context.Background()
	metrics := "# HELP kubernetes_build_info A metric\n" +
		`kubernetes_build_info{build_date="2026-01-01T00:00:00Z",git_version="v1.36.3",major="1",minor="36"} 1` + "\n"

	// The configuration and the version, read at once, both kept.
	addr := kubeProxyServer(t, testConfigz, metrics)
	for name, read := range map[string]func() (string, string, []string, error){
		"ProxyConfigFromConfigz": func() (string, string, []string, error) {
			pc, err := ProxyConfigFromConfigz(ctx, addr)
			return pc.Mode, pc.Version + " " + pc.Source, pc.ClusterCIDRs, err
		},
		"StartProxyConfigFromConfigz": func() (string, string, []string, error) {
			pc, err := StartProxyConfigFromConfigz(ctx, addr)()
			return pc.Mode, pc.Version + " " + pc.Source, pc.ClusterCIDRs, err
		},
	} {
		mode, version, cidrs, err := read()
		if err != nil || mode != "nftables" || version != "v1.36.3 configz" || len(cidrs) != 2 {
			t.Errorf("%s: mode %q, version and source %q, CIDRs %v, error %v", name, mode, version, cidrs, err)
		}
	}

	// Without /metrics the configuration stands, without a version.
	pc, err := ProxyConfigFromConfigz(ctx, kubeProxyServer(t, testConfigz, ""))
	if err != nil || pc.Mode != "nftables" || pc.Version != "" {
		t.Errorf("without /metrics: %+v, %v", pc, err)
	}

	// Without /configz there is no configuration: an error naming it.
	_, err = StartProxyConfigFromConfigz(ctx, kubeProxyServer(t, "", metrics))()
	if err == nil || !strings.Contains(err.Error(), "/configz") {
		t.Errorf("without /configz: error %v, want one naming /configz", err)
	}
}
