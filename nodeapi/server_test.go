package nodeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// apiServer answers TokenReviews and SubjectAccessReviews as an RBAC'd API
// server would: tokens name users, and grants say who may do which verb.
type apiServer struct {
	tokens map[string]string   // token -> user
	grants map[string][]string // user -> verbs on nodes/svctrace
	mu     sync.Mutex
	asked  []authzv1.ResourceAttributes
}

func (a *apiServer) client() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(act k8stesting.Action) (bool, runtime.Object, error) {
		tr := act.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if u, ok := a.tokens[tr.Spec.Token]; ok {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(act k8stesting.Action) (bool, runtime.Object, error) {
		sar := act.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		ra := *sar.Spec.ResourceAttributes
		a.mu.Lock()
		a.asked = append(a.asked, ra)
		a.mu.Unlock()
		sar.Status.Allowed = ra.Resource == "nodes" && ra.Subresource == "svctrace" && ra.Name == "node1" &&
			slices.Contains(a.grants[sar.Spec.User], ra.Verb)
		if ra.Verb == "impersonate" {
			sar.Status.Allowed = slices.Contains(a.grants[sar.Spec.User], "impersonate "+ra.Resource+" "+ra.Name)
		}
		return true, sar, nil
	})
	return cs
}

type ranCmd struct {
	args  []string
	stdin string
}

// serve starts the API of node1 on loopback and returns the agent's Pod as
// the API server would show it, and what the server ran.
func serve(t *testing.T, a *apiServer, cas *x509.CertPool) (*corev1.Pod, func() []ranCmd) {
	t.Helper()
	cert, fp, err := NewCert("node1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []ranCmd
	s := &Server{Node: "node1", Auth: &Auth{Client: a.client(), ClientCAs: cas}, BackupDir: "/var/lib/svctrace/backups",
		Run: func(_ context.Context, args []string, stdin string) ([]byte, []byte, int, error) {
			mu.Lock()
			ran = append(ran, ranCmd{args, stdin})
			mu.Unlock()
			if args[0] == "node-state" {
				return []byte(`{"kind":"Snapshot"}`), nil, 0, nil
			}
			return []byte(`{"kind":"RulesPlan"}`), []byte("error: kube-proxy is running"), 1, nil
		},
		Report: func() ([]byte, error) { return []byte(`{"ready":true}`), nil }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, cert) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	port := ln.Addr().(*net.TCPAddr).Port
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "svctrace", Name: "agent-x",
		Annotations: map[string]string{CertAnnotation: fp, PortAnnotation: strconv.Itoa(port)}},
		Status: corev1.PodStatus{PodIP: "127.0.0.1"}}
	return pod, func() []ranCmd { mu.Lock(); defer mu.Unlock(); return slices.Clone(ran) }
}

func tokenClient(t *testing.T, pod *corev1.Pod, token string) *NodeClient {
	t.Helper()
	c, err := NewNodeClient(&rest.Config{BearerToken: token}, pod)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func refused(t *testing.T, err error, code int, want string) {
	t.Helper()
	var r *ErrRefused
	if !errors.As(err, &r) || r.Code != code || !strings.Contains(r.Message, want) {
		t.Errorf("error %v, want a refusal %d saying %q", err, code, want)
	}
}

// TestReadCannotRepair: a reader reads the node, and is refused a repair
// naming the role it lacks; a repairer repairs; a stranger reads nothing.
func TestReadCannotRepair(t *testing.T) {
	a := &apiServer{tokens: map[string]string{"r": "reader", "w": "repairer", "n": "nobody"},
		grants: map[string][]string{"reader": {"get"}, "repairer": {"get", "update"}}}
	pod, ran := serve(t, a, nil)
	ctx := t.Context()

	reader := tokenClient(t, pod, "r")
	if b, err := reader.NodeState(ctx, []string{"10.96.0.10", "fd00::1"}); err != nil || string(b) != `{"kind":"Snapshot"}` {
		t.Errorf("reader's node-state: %q, %v", b, err)
	}
	if b, err := reader.Report(ctx); err != nil || string(b) != `{"ready":true}` {
		t.Errorf("reader's report: %q, %v", b, err)
	}
	_, err := reader.Rules(ctx, RulesRequest{})
	refused(t, err, 403, `user "reader" may not update nodes/svctrace of node node1: that needs the svctrace-repair ClusterRole`)
	_, err = reader.Rollback(ctx, RollbackRequest{Backup: "rules-node1.yaml"})
	refused(t, err, 403, "svctrace-repair")
	_, err = reader.Conntrack(ctx)
	refused(t, err, 403, "svctrace-repair")

	repairer := tokenClient(t, pod, "w")
	res, err := repairer.Rules(ctx, RulesRequest{Service: "default/web", KubeProxyVersion: "v1.36.3", Force: true, Backup: "/var/lib/svctrace/backups/b.yaml"})
	if err != nil || res.ExitCode != 1 || res.Stdout != `{"kind":"RulesPlan"}` || !strings.Contains(res.Stderr, "kube-proxy is running") {
		t.Errorf("repairer's rules: %+v, %v", res, err)
	}
	if res, err := repairer.Conntrack(ctx); err != nil || res.ExitCode != 1 {
		t.Errorf("repairer's conntrack: %+v, %v", res, err)
	}

	_, err = tokenClient(t, pod, "n").NodeState(ctx, nil)
	refused(t, err, 403, `user "nobody" may not get nodes/svctrace of node node1: that needs the svctrace-user ClusterRole`)
	_, err = tokenClient(t, pod, "stolen").Report(ctx)
	refused(t, err, 401, "unauthenticated")
	c, err := NewNodeClient(&rest.Config{}, pod)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Report(ctx)
	refused(t, err, 401, "send a bearer token, or a client certificate")

	want := []ranCmd{
		{[]string{"node-state", "--node", "node1", "--conntrack-dst-stdin"}, "10.96.0.10\nfd00::1\n"},
		{[]string{"reconcile", "rules", "--local", "--node", "node1", "--apply", "-o", "json", "--requested-by=repairer", "--service", "default/web",
			"--kube-proxy-version", "v1.36.3", "--backup", "/var/lib/svctrace/backups/b.yaml", "--force"}, ""},
		{[]string{"reconcile", "conntrack", "--local", "--node", "node1", "--apply", "-o", "json"}, ""},
	}
	if got := ran(); !slices.EqualFunc(got, want, func(a, b ranCmd) bool { return slices.Equal(a.args, b.args) && a.stdin == b.stdin }) {
		t.Errorf("ran %q, want %q", got, want)
	}
	for _, ra := range a.asked {
		if ra.Resource != "nodes" || ra.Subresource != "svctrace" || ra.Name != "node1" {
			t.Errorf("asked the API server about %+v", ra)
		}
	}
}

// TestOneRepairAtATime: while a repair runs through the agent, another
// repair or a rollback is refused at once, before a second process starts
// under the agent's memory limit; after it, the next one runs.
func TestOneRepairAtATime(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	runs := 0
	s := &Server{Node: "node1", BackupDir: "/var/lib/svctrace/backups",
		Run: func(context.Context, []string, string) ([]byte, []byte, int, error) {
			runs++
			if runs == 1 {
				close(entered)
				<-release
			}
			return []byte("{}"), nil, 0, nil
		}}
	ctx := t.Context()
	first := make(chan int, 1)
	go func() {
		code, _ := s.rules(ctx, User{Name: "carol"}, []byte(`{}`))
		first <- code
	}()
	<-entered
	for _, call := range []func() (int, any){
		func() (int, any) { return s.rules(ctx, User{Name: "dave"}, []byte(`{}`)) },
		func() (int, any) { return s.rollback(ctx, User{Name: "dave"}, []byte(`{"backup":"b.yaml"}`)) },
	} {
		code, body := call()
		if st, ok := body.(Status); code != http.StatusConflict || !ok || !strings.Contains(st.Message, "another repair or rollback of node node1 is running") {
			t.Errorf("while a repair runs: %d %+v, want 409 saying another runs", code, body)
		}
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first repair: %d", code)
	}
	if code, body := s.rollback(ctx, User{Name: "dave"}, []byte(`{"backup":"b.yaml"}`)); code != http.StatusOK {
		t.Errorf("after it: %d %+v", code, body)
	}
	if runs != 2 {
		t.Errorf("%d processes ran, want 2", runs)
	}
}

// TestHostileRequests: what a repairer sends is checked before it becomes
// an argument; nothing hostile runs.
func TestHostileRequests(t *testing.T) {
	a := &apiServer{tokens: map[string]string{"w": "repairer"}, grants: map[string][]string{"repairer": {"get", "update"}}}
	pod, ran := serve(t, a, nil)
	c := tokenClient(t, pod, "w")
	for _, r := range []RulesRequest{
		{Backup: "../../../etc/cron.d/x"},
		{Backup: "/etc/shadow"},
		{Service: "default/web --apply"},
		{Service: "x"},
		{KubeProxyVersion: "v1.36.3; rm -rf /"},
		{IPTablesBackend: "--help"},
	} {
		if _, err := c.Rules(t.Context(), r); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
			t.Errorf("%+v: %v, want a refusal", r, err)
		}
	}
	if _, err := c.Rollback(t.Context(), RollbackRequest{Backup: "../x"}); err == nil {
		t.Error("a rollback of ../x was accepted")
	}
	if _, err := c.NodeState(t.Context(), []string{"10.0.0.1\n--help"}); err == nil {
		t.Error("a conntrack address with a newline was accepted")
	}
	if got := ran(); len(got) != 0 {
		t.Errorf("ran %q", got)
	}
}

// TestPinnedCertificate: the client talks only to the server whose
// certificate the Pod publishes, and sends it no token otherwise.
func TestPinnedCertificate(t *testing.T) {
	a := &apiServer{tokens: map[string]string{"r": "reader"}, grants: map[string][]string{"reader": {"get"}}}
	pod, _ := serve(t, a, nil)
	pod.Annotations[CertAnnotation] = strings.Repeat("0", 64)
	_, err := tokenClient(t, pod, "r").Report(t.Context())
	if err == nil || !strings.Contains(err.Error(), "is not agent Pod svctrace/agent-x") {
		t.Errorf("a server with another certificate: %v", err)
	}
	delete(pod.Annotations, CertAnnotation)
	if _, err := NewNodeClient(&rest.Config{}, pod); err == nil || !strings.Contains(err.Error(), "publishes no API certificate") {
		t.Errorf("a Pod without the annotation: %v", err)
	}
}

// TestClientCertificate: a user of the cluster's client CA is known by
// its certificate's subject; one of another CA is not.
func TestClientCertificate(t *testing.T) {
	caKey, caCert, caPEM := newCA(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	a := &apiServer{grants: map[string][]string{"alice": {"get"}}}
	pod, _ := serve(t, a, pool)
	certPEM, keyPEM := clientCert(t, caKey, caCert, "alice")
	c, err := NewNodeClient(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM}}, pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Report(t.Context()); err != nil {
		t.Errorf("alice's report: %v", err)
	}
	otherKey, otherCert, _ := newCA(t)
	certPEM, keyPEM = clientCert(t, otherKey, otherCert, "alice")
	c, err = NewNodeClient(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM}}, pod)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Report(t.Context())
	refused(t, err, 401, "unauthenticated")
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func clientCert(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate, cn string) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// TestImpersonation: kubectl's --as is honoured as the API server would
// honour it: only for a caller who may impersonate that user and group,
// and then the impersonated user's rights are what count.
func TestImpersonation(t *testing.T) {
	a := &apiServer{tokens: map[string]string{"admin": "admin", "r": "reader"},
		grants: map[string][]string{"admin": {"impersonate users alice", "impersonate groups ops"}, "alice": {"get"}}}
	pod, _ := serve(t, a, nil)
	as := func(token, user string, groups ...string) *NodeClient {
		c, err := NewNodeClient(&rest.Config{BearerToken: token, Impersonate: rest.ImpersonationConfig{UserName: user, Groups: groups}}, pod)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := as("admin", "alice").Report(t.Context()); err != nil {
		t.Errorf("admin as alice reads: %v", err)
	}
	_, err := as("admin", "alice").Rules(t.Context(), RulesRequest{})
	refused(t, err, 403, `user "alice" may not update nodes/svctrace`)
	_, err = as("admin", "alice", "system:masters").Report(t.Context())
	refused(t, err, 403, `user "admin" may not impersonate groups "system:masters"`)
	_, err = as("r", "alice").Report(t.Context())
	refused(t, err, 403, `user "reader" may not impersonate users "alice"`)
}
