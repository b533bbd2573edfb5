//go:build linux

package lab

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files kube-apiserver and its clients need.
type pki struct {
	caPEM      []byte
	caFile     string
	certFile   string // apiserver serving certificate
	keyFile    string
	saKeyFile  string // service-account signing key (private, also accepted as the public key file)
	tokensFile string
	adminToken string
	proxyToken string
	kcmToken   string // system:kube-controller-manager
	schedToken string // system:kube-scheduler
	// ca signs the certificates of the lab's nodes and clients (issue).
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func randToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// makePKI writes a CA, a serving certificate for the API server (valid for ips and the usual
// in-cluster names), a service-account key and a static token file into dir.
func makePKI(dir string, ips []net.IP) (*pki, error) {
	p := &pki{
		caFile:     filepath.Join(dir, "ca.crt"),
		saKeyFile:  filepath.Join(dir, "sa.key"),
		tokensFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "svctrace-lab-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caCert, p.caKey, p.serial = caCert, caKey, 2
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(p.caFile, p.caPEM, 0o644); err != nil {
		return nil, err
	}

	if p.certFile, p.keyFile, err = p.issue(dir, "apiserver", certSpec{
		cn: "kube-apiserver",
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		ips:    append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...),
		server: true,
	}); err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.saKeyFile, "EC PRIVATE KEY", saDER); err != nil {
		return nil, err
	}

	if p.adminToken, err = randToken(); err != nil {
		return nil, err
	}
	if p.proxyToken, err = randToken(); err != nil {
		return nil, err
	}
	if p.kcmToken, err = randToken(); err != nil {
		return nil, err
	}
	if p.schedToken, err = randToken(); err != nil {
		return nil, err
	}
	// token,user,uid,"groups"; system:kube-proxy is bound to system:node-proxier by the
	// bootstrap RBAC policy, as on a real cluster, and so are the controller manager's and
	// the scheduler's users to their roles.
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,system:kube-proxy,kube-proxy,\"system:authenticated\"\n"+
		"%s,system:kube-controller-manager,kube-controller-manager,\"system:authenticated\"\n"+
		"%s,system:kube-scheduler,kube-scheduler,\"system:authenticated\"\n",
		p.adminToken, p.proxyToken, p.kcmToken, p.schedToken)
	if err := os.WriteFile(p.tokensFile, []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// kubeconfig renders a kubeconfig for server with a bearer token.
func kubeconfig(server string, caPEM []byte, user, token string) []byte {
	return kubeconfigWith(server, caPEM, user, "    token: "+token+"\n")
}

// kubeconfigWith renders a kubeconfig for server whose user authenticates with auth (the
// user: mapping's lines).
func kubeconfigWith(server string, caPEM []byte, user, auth string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: svctrace-lab
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
%scontexts:
- name: svctrace-lab
  context:
    cluster: svctrace-lab
    user: %s
current-context: svctrace-lab
`, server, b64(caPEM), user, auth, user)
}

// certSpec describes a certificate the lab CA issues.
type certSpec struct {
	cn     string
	orgs   []string
	ips    []net.IP
	dns    []string
	server bool // server auth; else client auth
}

// issue writes a key and a certificate signed by the lab CA to dir/name.{crt,key} and returns
// their paths.
func (p *pki) issue(dir, name string, s certSpec) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	p.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses:  s.ips,
		DNSNames:     s.dns,
	}
	if s.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", keyDER); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// certKubeconfig renders a kubeconfig for server with a client certificate.
func certKubeconfig(server string, caPEM []byte, user, certFile, keyFile string) []byte {
	return kubeconfigWith(server, caPEM, user, "    client-certificate: "+certFile+"\n    client-key: "+keyFile+"\n")
}
