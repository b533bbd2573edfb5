//go:build linux

package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// fieldManager is the server-side-apply field manager of everything the lab writes.
const fieldManager = "svctrace-lab"

// apiClient talks to kube-apiserver with the admin token. Its connections are made inside the
// control-plane namespace (dialInNetns), so the starting namespace needs no route to the lab.
type apiClient struct {
	base   string
	token  string
	client *http.Client
}

func newAPIClient(base, nsPath string, caPEM []byte, token string) (*apiClient, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("bad CA PEM")
	}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, nsPath, network, addr)
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &apiClient{base: base, token: token, client: &http.Client{Transport: tr, Timeout: 60 * time.Second}}, nil
}

func (c *apiClient) close() { c.client.CloseIdleConnections() }

// StatusError is a non-2xx answer from the API server.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Code, strings.TrimSpace(e.Body))
}

// IsNotFound reports whether err is an HTTP 404 from the API server.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

func (c *apiClient) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: string(b)}
	}
	return b, nil
}

// Request sends a raw request to the API server as admin (path like "/api/v1/nodes") and
// returns the body of a 2xx answer; other answers are a *StatusError.
func (l *Lab) Request(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	return l.api.do(ctx, method, path, contentType, body)
}

type apiResource struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
}

// resourceFor finds the REST resource of apiVersion/kind through discovery (cached).
func (l *Lab) resourceFor(ctx context.Context, apiVersion, kind string) (res apiResource, hasStatus bool, err error) {
	l.mu.Lock()
	list, ok := l.discovery[apiVersion]
	l.mu.Unlock()
	if !ok {
		path := "/apis/" + apiVersion
		if !strings.Contains(apiVersion, "/") {
			path = "/api/" + apiVersion
		}
		b, err := l.api.do(ctx, "GET", path, "", nil)
		if err != nil {
			return res, false, err
		}
		var rl struct {
			Resources []apiResource `json:"resources"`
		}
		if err := json.Unmarshal(b, &rl); err != nil {
			return res, false, err
		}
		list = rl.Resources
		l.mu.Lock()
		l.discovery[apiVersion] = list
		l.mu.Unlock()
	}
	found := false
	for _, r := range list {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			res, found = r, true
		}
	}
	if !found {
		return res, false, fmt.Errorf("no resource for %s %s", apiVersion, kind)
	}
	for _, r := range list {
		if r.Name == res.Name+"/status" {
			hasStatus = true
		}
	}
	return res, hasStatus, nil
}

func objectPath(apiVersion string, res apiResource, namespace, name string) string {
	var b strings.Builder
	if strings.Contains(apiVersion, "/") {
		b.WriteString("/apis/" + apiVersion)
	} else {
		b.WriteString("/api/" + apiVersion)
	}
	if res.Namespaced {
		b.WriteString("/namespaces/" + url.PathEscape(namespace))
	}
	b.WriteString("/" + res.Name)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
	}
	return b.String()
}

// Apply creates or updates every object in yamlText (YAML or JSON, several documents separated
// by ---, or a kind: List) with server-side apply, as admin. A "status" in an object is applied
// to its status subresource too (Pod IPs, Node addresses, ...). Namespaces that do not exist are
// created. Fails the test on error.
func (l *Lab) Apply(t TB, yamlText string) {
	t.Helper()
	if err := l.ApplyE(context.Background(), yamlText); err != nil {
		t.Fatalf("lab: apply: %v", err)
	}
}

// ApplyE is Apply returning the error.
func (l *Lab) ApplyE(ctx context.Context, yamlText string) error {
	objs, err := decodeObjects(yamlText)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := l.applyObject(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func decodeObjects(text string) ([]map[string]any, error) {
	rd := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var out []map[string]any
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := k8syaml.ToJSON(doc)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") {
			if items, ok := obj["items"].([]any); ok {
				for _, it := range items {
					if m, ok := it.(map[string]any); ok {
						out = append(out, m)
					}
				}
				continue
			}
		}
		out = append(out, obj)
	}
}

func meta(obj map[string]any) (apiVersion, kind, namespace, name string) {
	apiVersion, _ = obj["apiVersion"].(string)
	kind, _ = obj["kind"].(string)
	if m, ok := obj["metadata"].(map[string]any); ok {
		namespace, _ = m["namespace"].(string)
		name, _ = m["name"].(string)
	}
	return
}

func (l *Lab) applyObject(ctx context.Context, obj map[string]any) error {
	apiVersion, kind, ns, name := meta(obj)
	if apiVersion == "" || kind == "" || name == "" {
		return fmt.Errorf("object without apiVersion, kind or metadata.name: %v", obj)
	}
	res, hasStatus, err := l.resourceFor(ctx, apiVersion, kind)
	if err != nil {
		return err
	}
	if res.Namespaced {
		if ns == "" {
			ns = "default"
			obj["metadata"].(map[string]any)["namespace"] = ns
		}
		if err := l.ensureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	status, withStatus := obj["status"]
	delete(obj, "status")
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	path := objectPath(apiVersion, res, ns, name)
	q := "?fieldManager=" + fieldManager + "&force=true"
	for {
		_, err := l.api.do(ctx, "PATCH", path+q, "application/apply-patch+yaml", body)
		if err == nil {
			break
		}
		// With kubelets, the controller manager makes each namespace's default
		// ServiceAccount a moment after the namespace; a Pod waits for it, as kubectl's
		// user would retry.
		if !l.kubelets || kind != "Pod" || !strings.Contains(err.Error(), "error looking up service account") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
	if withStatus && hasStatus {
		st := map[string]any{
			"apiVersion": apiVersion,
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"status":     status,
		}
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		if _, err := l.api.do(ctx, "PATCH", path+"/status"+q, "application/apply-patch+yaml", b); err != nil {
			return err
		}
	}
	l.noteChange(kind)
	return nil
}

// noteChange records the time of a change kube-proxy watches (WaitSynced gives it time to
// arrive).
func (l *Lab) noteChange(kind string) {
	switch kind {
	case "Service", "EndpointSlice", "Node", "ServiceCIDR":
	default:
		return
	}
	l.mu.Lock()
	l.lastChange = time.Now()
	l.mu.Unlock()
}

func (l *Lab) ensureNamespace(ctx context.Context, ns string) error {
	l.mu.Lock()
	done := l.createdNS[ns]
	l.mu.Unlock()
	if done {
		return nil
	}
	body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
	if _, err := l.api.do(ctx, "PATCH", "/api/v1/namespaces/"+url.PathEscape(ns)+"?fieldManager="+fieldManager,
		"application/apply-patch+yaml", body); err != nil {
		return err
	}
	l.mu.Lock()
	l.createdNS[ns] = true
	l.mu.Unlock()
	return nil
}

// Delete deletes one object (kind like "Service", "EndpointSlice", "Pod"; namespace ignored
// for cluster-scoped kinds). Pods are deleted with grace period 0, since no kubelet would
// confirm a graceful deletion. Deleting an object that does not exist is not an error.
func (l *Lab) Delete(kind, namespace, name string) error {
	ctx := context.Background()
	apiVersion, err := l.apiVersionOf(ctx, kind)
	if err != nil {
		return err
	}
	res, _, err := l.resourceFor(ctx, apiVersion, kind)
	if err != nil {
		return err
	}
	if namespace == "" {
		namespace = "default"
	}
	body := []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`)
	if kind == "Pod" {
		body = []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","gracePeriodSeconds":0}`)
	}
	_, err = l.api.do(ctx, "DELETE", objectPath(apiVersion, res, namespace, name), "application/json", body)
	if IsNotFound(err) {
		err = nil
	}
	if err == nil {
		l.noteChange(kind)
	}
	return err
}

// Get returns one object as decoded JSON (kind as in Delete).
func (l *Lab) Get(kind, namespace, name string) (map[string]any, error) {
	ctx := context.Background()
	apiVersion, err := l.apiVersionOf(ctx, kind)
	if err != nil {
		return nil, err
	}
	res, _, err := l.resourceFor(ctx, apiVersion, kind)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		namespace = "default"
	}
	b, err := l.api.do(ctx, "GET", objectPath(apiVersion, res, namespace, name), "", nil)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	return obj, json.Unmarshal(b, &obj)
}

// ClusterIP returns spec.clusterIP of a Service.
func (l *Lab) ClusterIP(namespace, name string) (string, error) {
	svc, err := l.Get("Service", namespace, name)
	if err != nil {
		return "", err
	}
	spec, _ := svc["spec"].(map[string]any)
	ip, _ := spec["clusterIP"].(string)
	if ip == "" {
		return "", fmt.Errorf("service %s/%s has no clusterIP", namespace, name)
	}
	return ip, nil
}

// apiVersionOf maps the kinds tests use to their apiVersion; anything else may be given as
// "group/version/Kind" or "version/Kind".
func (l *Lab) apiVersionOf(_ context.Context, kind string) (string, error) {
	switch kind {
	case "Service", "Pod", "Node", "Namespace", "Endpoints", "ConfigMap", "ServiceAccount", "Secret", "Event":
		return "v1", nil
	case "EndpointSlice":
		return "discovery.k8s.io/v1", nil
	}
	return "", fmt.Errorf("lab: unknown kind %q (known: Service, EndpointSlice, Pod, Node, Namespace, Endpoints, ConfigMap, ServiceAccount, Secret, Event)", kind)
}

// registerNode creates the Node object with its podCIDR and sets its addresses and Ready
// condition (kube-proxy waits for a node IP before its first sync).
func (l *Lab) registerNode(n *Node) error {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"name": n.Name,
			"labels": map[string]any{
				"kubernetes.io/hostname": n.Name,
				"kubernetes.io/os":       "linux",
			},
		},
		"spec": map[string]any{"podCIDR": n.PodCIDR, "podCIDRs": []any{n.PodCIDR}},
		"status": map[string]any{
			"addresses": []any{
				map[string]any{"type": "InternalIP", "address": n.IP},
				map[string]any{"type": "Hostname", "address": n.Name},
			},
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "KubeletReady",
				"message":            "svctrace lab node",
				"lastHeartbeatTime":  time.Now().UTC().Format(time.RFC3339),
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		},
	}
	if l.kubelets {
		// The kubelet reports the node's addresses and conditions itself.
		delete(obj, "status")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return l.applyObject(ctx, obj)
}
