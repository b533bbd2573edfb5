package nodeapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// NodeClient calls the API of the agent in one Pod, as the user of a
// kubeconfig.
type NodeClient struct {
	pod  string
	base string
	http *http.Client
}

// ErrRefused is an answer of the agent that the caller may not do what it
// asked, or is not known to the API server; the error's text says which
// role it lacks.
type ErrRefused struct {
	Code    int
	Message string
}

func (e *ErrRefused) Error() string { return e.Message }

// Address is where the agent in pod serves its API (host:port): the Pod's
// address (its node's, with the host network) and the port it publishes,
// else DefaultPort.
func Address(pod *corev1.Pod) (string, error) {
	name := pod.Namespace + "/" + pod.Name
	port := DefaultPort
	if p := pod.Annotations[PortAnnotation]; p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("agent Pod %s: annotation %s %q is not a port", name, PortAnnotation, p)
		}
		port = n
	}
	host := pod.Status.PodIP
	if host == "" {
		host = pod.Status.HostIP
	}
	if host == "" {
		return "", fmt.Errorf("agent Pod %s has no address yet", name)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// NewNodeClient makes the client of the agent in pod, authenticating as
// cfg's user (its client certificate, or its bearer token: static, from a
// file, or from an exec plugin) and trusting only the certificate whose
// fingerprint the Pod publishes.
func NewNodeClient(cfg *rest.Config, pod *corev1.Pod) (*NodeClient, error) {
	name := pod.Namespace + "/" + pod.Name
	pin := pod.Annotations[CertAnnotation]
	if pin == "" {
		return nil, fmt.Errorf("agent Pod %s publishes no API certificate (annotation %s): it runs an svctrace from before the node API, or cannot annotate its Pod (its log says why); update the DaemonSet from deploy/", name, CertAnnotation)
	}
	addr, err := Address(pod)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's TLS settings: %w", err)
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	// The agent's certificate is its own, self-signed: it is trusted by
	// the fingerprint the API server holds, not by a CA.
	tlsCfg.RootCAs, tlsCfg.ServerName = nil, ""
	tlsCfg.InsecureSkipVerify = true
	tlsCfg.MinVersion = tls.VersionTLS12
	tlsCfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 || !strings.EqualFold(Fingerprint(cs.PeerCertificates[0].Raw), pin) {
			return fmt.Errorf("the server at %s is not agent Pod %s: its certificate is not the one the Pod publishes", addr, name)
		}
		return nil
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2,
		// Each client has its own transport: a long-lived caller that
		// reads every node again and again must not keep them all open.
		IdleConnTimeout: 30 * time.Second}
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's credentials: %w", err)
	}
	// --request-timeout bounds each call, as it bounds the API server's.
	return &NodeClient{pod: name, base: "https://" + addr, http: &http.Client{Transport: rt, Timeout: cfg.Timeout}}, nil
}

// NodeState reads the node's kernel state (a snapshot of one node),
// keeping the conntrack entries to dst.
func (c *NodeClient) NodeState(ctx context.Context, dst []string) ([]byte, error) {
	return c.call(ctx, http.MethodPost, PathNodeState, NodeStateRequest{ConntrackDst: dst})
}

// Report is the agent's report (JSON).
func (c *NodeClient) Report(ctx context.Context) ([]byte, error) {
	return c.call(ctx, http.MethodGet, PathReport, nil)
}

// Rules runs reconcile rules --apply on the node.
func (c *NodeClient) Rules(ctx context.Context, r RulesRequest) (RunResult, error) {
	return c.run(ctx, PathRules, r)
}

// Conntrack runs reconcile conntrack --apply on the node.
func (c *NodeClient) Conntrack(ctx context.Context) (RunResult, error) {
	return c.run(ctx, PathConntrack, ConntrackRequest{})
}

// Rollback runs reconcile rollback on the node.
func (c *NodeClient) Rollback(ctx context.Context, r RollbackRequest) (RunResult, error) {
	return c.run(ctx, PathRollback, r)
}

func (c *NodeClient) run(ctx context.Context, path string, req any) (RunResult, error) {
	var res RunResult
	b, err := c.call(ctx, http.MethodPost, path, req)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("the answer of agent Pod %s: %w", c.pod, err)
	}
	return res, nil
}

func (c *NodeClient) call(ctx context.Context, method, path string, body any) ([]byte, error) {
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, in)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent Pod %s (%s): %w", c.pod, c.base, ctx.Err())
		}
		return nil, fmt.Errorf("agent Pod %s (%s): %w", c.pod, c.base, unwrapURL(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("agent Pod %s: reading its answer: %w", c.pod, err)
	}
	if resp.StatusCode == http.StatusOK {
		return b, nil
	}
	var st Status
	if json.Unmarshal(b, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(b))
	}
	msg := fmt.Sprintf("agent Pod %s: %s", c.pod, st.Message)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, &ErrRefused{Code: resp.StatusCode, Message: msg}
	}
	return nil, fmt.Errorf("%s (HTTP %d)", msg, resp.StatusCode)
}

func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap()
	}
	return err
}
