package reconcile

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/inspect"
)

func kubeProxySynced(at time.Time) inspect.KubeProxySync {
	return inspect.KubeProxySync{Version: "v1.36.3", LastSync: at}
}

// kube-proxy's check fails closed: only nothing listening (kube-proxy is
// down) lets an apply go on without an answer; an HTTP error, text that
// is not metrics, or no answer in time refuse it, saying what could not be
// read.
func TestCheckKubeProxyFailsClosed(t *testing.T) {
	serve := func(h http.HandlerFunc) string {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	stale := time.Now().Add(-2 * time.Hour).Unix()
	metrics := "kubeproxy_sync_proxy_rules_last_timestamp_seconds " + strconv.FormatInt(stale, 10) + "\n"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	cases := []struct {
		name, addr, want string
	}{
		{"refused", refused, ""},
		{"synced long ago", serve(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(metrics)) }), ""},
		{"HTTP 500", serve(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }), "500 Internal Server Error"},
		{"garbage", serve(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>{{{ not metrics\n")) }), "not Prometheus text"},
		{"no answer", serve(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}), "deadline exceeded"},
		{"synced a minute ago", serve(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("kubeproxy_sync_proxy_rules_last_timestamp_seconds " + strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10) + "\n"))
		}), "is running and synced its rules"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			err := KubeProxyCheck(c.addr, []string{"IPv4"})(ctx)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error saying %q", err, c.want)
			case c.want != "" && c.name != "synced a minute ago" && !strings.Contains(err.Error(), "could not be read"):
				t.Errorf("%v: does not say kube-proxy's state could not be read", err)
			}
		})
	}
}
