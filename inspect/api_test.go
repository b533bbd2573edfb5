package inspect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// warnings records the warning headers a client passes to its handler.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// apiServer answers the lists CollectAPI makes; endpoints answers the
// Endpoints list with a status code and body. Every list carries a
// warning header naming its resource.
func apiServer(t *testing.T, endpointsCode int, endpointsBody string) (*httptest.Server, *warnings, kubernetes.Interface) {
	t.Helper()
	lists := map[string]string{
		"/api/v1/services":                         `{"kind":"ServiceList","apiVersion":"v1","items":[{"metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.5"}}]}`,
		"/apis/discovery.k8s.io/v1/endpointslices": `{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","items":[]}`,
		"/api/v1/nodes":                            `{"kind":"NodeList","apiVersion":"v1","items":[]}`,
		"/api/v1/pods":                             `{"kind":"PodList","apiVersion":"v1","items":[]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Warning", `299 - "listing `+r.URL.Path+`"`)
		if r.URL.Path == "/api/v1/endpoints" {
			w.WriteHeader(endpointsCode)
			_, _ = w.Write([]byte(endpointsBody))
			return
		}
		body, ok := lists[r.URL.Path]
		if !ok {
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	rec := &warnings{}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, WarningHandler: rec})
	if err != nil {
		t.Fatal(err)
	}
	return srv, rec, cs
}

func TestCollectAPIEndpoints(t *testing.T) {
	const body = `{"kind":"EndpointsList","apiVersion":"v1","items":[{"metadata":{"name":"web","namespace":"shop","managedFields":[{"manager":"x"}]},"subsets":[{"addresses":[{"ip":"10.244.0.5"}],"ports":[{"port":8080}]}]}]}`
	_, rec, cs := apiServer(t, http.StatusOK, body)
	c, notes, err := CollectAPI(context.Background(), cs, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %q", notes)
	}
	if !c.EndpointsListed || len(c.Endpoints) != 1 || c.Endpoints[0].Subsets[0].Addresses[0].IP != "10.244.0.5" || c.Endpoints[0].ManagedFields != nil {
		t.Errorf("endpoints %+v, listed %v", c.Endpoints, c.EndpointsListed)
	}
	// The other lists' warnings reach the client's handler; the Endpoints
	// list's deprecation warning does not.
	joined := strings.Join(rec.got, "\n")
	if !strings.Contains(joined, "listing /api/v1/pods") || strings.Contains(joined, "/api/v1/endpoints") {
		t.Errorf("warnings handled: %q", rec.got)
	}
}

func TestCollectAPIEndpointsNotReadable(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
		note string
	}{
		{"forbidden", http.StatusForbidden,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"endpoints is forbidden"}`,
			"cannot list endpoints (forbidden by RBAC)"},
		{"not served", http.StatusNotFound,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`,
			"the API server does not serve v1 Endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, cs := apiServer(t, tt.code, tt.body)
			c, notes, err := CollectAPI(context.Background(), cs, "")
			if err != nil {
				t.Fatal(err)
			}
			if c.EndpointsListed || len(c.Endpoints) != 0 || len(c.Services) != 1 {
				t.Errorf("listed %v, endpoints %d, services %d", c.EndpointsListed, len(c.Endpoints), len(c.Services))
			}
			if len(notes) != 1 || !strings.HasPrefix(notes[0], tt.note) {
				t.Errorf("notes = %q, want one starting %q", notes, tt.note)
			}
		})
	}

	_, _, cs := apiServer(t, http.StatusInternalServerError,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500,"message":"etcd is down"}`)
	if _, _, err := CollectAPI(context.Background(), cs, ""); err == nil || !strings.Contains(err.Error(), "listing endpoints in all namespaces") {
		t.Errorf("error = %v", err)
	}
}
