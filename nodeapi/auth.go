package nodeapi

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// User is who a request comes from, as the API server knows them.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Auth authenticates callers and asks the API server what they may do.
type Auth struct {
	Client kubernetes.Interface
	// ClientCAs verify client certificates (the cluster's client CA);
	// nil: only bearer tokens are accepted.
	ClientCAs *x509.CertPool
	// TTL is how long a token's review is reused (0: 10 s).
	TTL time.Duration

	mu     sync.Mutex
	tokens map[[32]byte]cachedReview
}

type cachedReview struct {
	user User
	at   time.Time
}

// errUnauthenticated is a request whose caller is not known.
var errUnauthenticated = errors.New("unauthenticated")

// authenticate tells who sent r: the subject of a verified client
// certificate, else the user of its bearer token.
func (a *Auth) authenticate(ctx context.Context, r *http.Request) (User, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && a.ClientCAs != nil {
		leaf := r.TLS.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: a.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err == nil && leaf.Subject.CommonName != "" {
			return User{Name: leaf.Subject.CommonName, Groups: append(slicesClone(leaf.Subject.Organization), "system:authenticated")}, nil
		}
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return User{}, fmt.Errorf("%w: send a bearer token, or a client certificate of the cluster's client CA", errUnauthenticated)
	}
	return a.review(ctx, strings.TrimSpace(token))
}

// review asks the API server whose token this is, reusing an answer for
// TTL.
func (a *Auth) review(ctx context.Context, token string) (User, error) {
	key := sha256.Sum256([]byte(token))
	ttl := a.TTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	now := time.Now()
	a.mu.Lock()
	if c, ok := a.tokens[key]; ok && now.Sub(c.at) < ttl {
		a.mu.Unlock()
		return c.user, nil
	}
	a.mu.Unlock()
	tr, err := a.Client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return User{}, fmt.Errorf("reviewing the caller's token with the API server: %w", err)
	}
	if !tr.Status.Authenticated {
		why := tr.Status.Error
		if why == "" {
			why = "the API server does not know the token"
		}
		return User{}, fmt.Errorf("%w: %s", errUnauthenticated, why)
	}
	u := User{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups}
	if len(tr.Status.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			u.Extra[k] = v
		}
	}
	a.mu.Lock()
	if a.tokens == nil {
		a.tokens = map[[32]byte]cachedReview{}
	}
	for k, c := range a.tokens {
		if now.Sub(c.at) >= ttl {
			delete(a.tokens, k)
		}
	}
	a.tokens[key] = cachedReview{user: u, at: now}
	a.mu.Unlock()
	return u, nil
}

// authorize asks the API server whether u may verb nodes/svctrace of node.
func (a *Auth) authorize(ctx context.Context, u User, verb, node string) (bool, string, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: Resource, Subresource: Subresource, Name: node},
	}}
	res, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("asking the API server whether %s may %s %s/%s: %w", u.Name, verb, Resource, Subresource, err)
	}
	return res.Status.Allowed, res.Status.Reason, nil
}

// RoleFor names the role of deploy/cli-rbac.yaml that grants verb.
func RoleFor(verb string) string {
	if verb == VerbRepair {
		return "svctrace-repair"
	}
	return "svctrace-user"
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
