package nodeapi

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Options say how the agent serves its API.
type Options struct {
	Node    string
	Address string
	// PodNamespace and PodName name the agent's own Pod, where the
	// certificate's fingerprint is published.
	PodNamespace, PodName string
	BackupDir             string
	Report                func() ([]byte, error)
	Log                   *slog.Logger
}

// Start listens on o.Address with a fresh certificate, publishes its
// fingerprint on the agent's Pod, and serves the API until ctx ends. It
// returns once listening; serving errors go to errc.
func Start(ctx context.Context, cs kubernetes.Interface, o Options, errc chan<- error) (net.Addr, error) {
	cert, fp, err := NewCert(o.Node, time.Now())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return nil, fmt.Errorf("--api-address: %w", err)
	}
	cas, err := ClientCA(ctx, cs)
	if err != nil {
		o.Log.Warn("client certificates are not accepted, only bearer tokens", "err", err)
	}
	s := &Server{Node: o.Node, Auth: &Auth{Client: cs, ClientCAs: cas}, Run: ExecSelf, Report: o.Report, BackupDir: o.BackupDir, Log: o.Log}
	go func() { errc <- s.Serve(ctx, ln, cert) }()
	port := ln.Addr().(*net.TCPAddr).Port
	if o.PodName == "" || o.PodNamespace == "" {
		o.Log.Warn("the node API's certificate is not published ($POD_NAME and $POD_NAMESPACE are not set): the CLI cannot reach this agent", "sha256", fp)
		return ln.Addr(), nil
	}
	go func() {
		for delay := time.Second; ; delay = min(2*delay, time.Minute) {
			err := Publish(ctx, cs, o.PodNamespace, o.PodName, fp, port)
			if err == nil {
				o.Log.Info("node API certificate published", "pod", o.PodNamespace+"/"+o.PodName, "sha256", fp, "port", port)
				return
			}
			o.Log.Error("publishing the node API's certificate", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
		}
	}()
	return ln.Addr(), nil
}

// ClientCA is the cluster's client CA, as the API server publishes it for
// the servers that authenticate its users (the ConfigMap
// kube-system/extension-apiserver-authentication).
func ClientCA(ctx context.Context, cs kubernetes.Interface) (*x509.CertPool, error) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading kube-system/extension-apiserver-authentication is forbidden (deploy/agent.yaml binds the role extension-apiserver-authentication-reader): %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's client CA: %w", err)
	}
	pem := cm.Data["client-ca-file"]
	if pem == "" {
		return nil, errors.New("the API server publishes no client CA (client-ca-file in kube-system/extension-apiserver-authentication)")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pem)) {
		return nil, errors.New("kube-system/extension-apiserver-authentication: client-ca-file holds no certificate")
	}
	return pool, nil
}

// ExecSelf runs svctrace's own binary: each read and repair is its own
// process, as it would be on the node.
func ExecSelf(ctx context.Context, args []string, stdin string) ([]byte, []byte, int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("finding svctrace's binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return out.Bytes(), errOut.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.Bytes(), errOut.Bytes(), 0, err
	}
	return out.Bytes(), errOut.Bytes(), 0, nil
}
