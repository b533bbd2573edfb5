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
	"k8s.io/client-go/kubernetes"
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

// ProxySettings is kube-proxy's configuration as svctrace takes it on a
// node, for the CLI's --local and the agent alike: the running kube-proxy's
// /configz (configz, started while the API objects were listed), else its
// ConfigMap in the API (cs nil: no API to ask, as with an objects file),
// else nothing, which the analysis infers from the rules. fromConfigz says
// the first; note says which otherwise. err is the ConfigMap's read
// failing (a caller may go on with the settings inferred).
func ProxySettings(ctx context.Context, cs kubernetes.Interface, configz func() (snapshot.ProxyConfig, error)) (pc snapshot.ProxyConfig, fromConfigz bool, note string, err error) {
	pc, czErr := configz()
	if czErr == nil {
		return pc, true, "", nil
	}
	if cs == nil {
		return snapshot.ProxyConfig{}, false, "", nil
	}
	pc, note, err = ProxyConfigFromAPI(ctx, cs)
	if err != nil {
		return snapshot.ProxyConfig{}, false, "kube-proxy's settings are inferred from the rules: " + czErr.Error() + "; " + err.Error(), err
	}
	return pc, false, note, nil
}
