package inspect

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/svctrace/svctrace/snapshot"
)

// DefaultKubeProxyMetricsAddress is kube-proxy's default metrics server,
// which also serves /configz.
const DefaultKubeProxyMetricsAddress = "127.0.0.1:10249"

var buildInfoRE = regexp.MustCompile(`^kubernetes_build_info\{.*git_version="([^"]+)"`)

// ProxyConfigFromConfigz asks the kube-proxy on this node for its running
// configuration (/configz) and version (kubernetes_build_info in /metrics),
// both at once.
func ProxyConfigFromConfigz(ctx context.Context, addr string) (snapshot.ProxyConfig, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	metricsDone := make(chan string, 1)
	go func() {
		version := ""
		if metrics, err := get(ctx, "http://"+addr+"/metrics"); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(metrics))
			for sc.Scan() {
				if m := buildInfoRE.FindStringSubmatch(sc.Text()); m != nil {
					version = m[1]
					break
				}
			}
		}
		metricsDone <- version
	}()
	body, err := get(ctx, "http://"+addr+"/configz")
	if err != nil {
		cancel()
		<-metricsDone
		return snapshot.ProxyConfig{}, fmt.Errorf("reading kube-proxy /configz at %s: %w", addr, err)
	}
	pc, err := ParseKubeProxyConfiguration(body)
	version := <-metricsDone
	if err != nil {
		return snapshot.ProxyConfig{}, fmt.Errorf("kube-proxy /configz at %s: %w", addr, err)
	}
	pc.Source = "configz"
	pc.Version = version
	return pc, nil
}

// StartProxyConfigFromConfigz starts ProxyConfigFromConfigz and returns
// the function that waits for its answer: a caller lists the API objects
// meanwhile.
func StartProxyConfigFromConfigz(ctx context.Context, addr string) func() (snapshot.ProxyConfig, error) {
	type answer struct {
		pc  snapshot.ProxyConfig
		err error
	}
	done := make(chan answer, 1)
	go func() {
		pc, err := ProxyConfigFromConfigz(ctx, addr)
		done <- answer{pc, err}
	}()
	return func() (snapshot.ProxyConfig, error) {
		a := <-done
		return a.pc, a.err
	}
}

func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 8<<20))
}
