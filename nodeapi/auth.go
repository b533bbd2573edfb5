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

// The ways a caller is refused before the node's own check.
var (
	errUnauthenticated  = errors.New("unauthenticated")
	errForbidden        = errors.New("forbidden")
	errBadImpersonation = errors.New("bad impersonation")
)

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

// impersonate is the user r asks to act as (kubectl's --as, --as-group,
// --as-uid), where u may impersonate them, as the API server decides it;
// u itself where r asks for no one.
func (a *Auth) impersonate(ctx context.Context, u User, r *http.Request) (User, error) {
	name := r.Header.Get("Impersonate-User")
	groups := r.Header.Values("Impersonate-Group")
	uid := r.Header.Get("Impersonate-Uid")
	extra := map[string][]string{}
	for k, v := range r.Header {
		if key, ok := strings.CutPrefix(k, "Impersonate-Extra-"); ok {
			extra[strings.ToLower(key)] = v
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return User{}, fmt.Errorf("%w: impersonating groups, a UID or extras needs a user (--as)", errBadImpersonation)
		}
		return u, nil
	}
	checks := []authzv1.ResourceAttributes{{Verb: "impersonate", Resource: "users", Name: name}}
	if ns, sa, ok := strings.Cut(strings.TrimPrefix(name, "system:serviceaccount:"), ":"); ok && strings.HasPrefix(name, "system:serviceaccount:") {
		checks[0] = authzv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: sa}
	}
	for _, g := range groups {
		checks = append(checks, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if uid != "" {
		checks = append(checks, authzv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	for k, vs := range extra {
		for _, v := range vs {
			checks = append(checks, authzv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v})
		}
	}
	for _, c := range checks {
		ok, _, err := a.allowed(ctx, u, c)
		if err != nil {
			return User{}, err
		}
		if !ok {
			return User{}, fmt.Errorf("%w: user %q may not impersonate %s %q", errForbidden, u.Name, c.Resource, c.Name)
		}
	}
	if !slicesContains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	if len(extra) == 0 {
		extra = nil
	}
	return User{Name: name, UID: uid, Groups: groups, Extra: extra}, nil
}

// authorize asks the API server whether u may verb nodes/svctrace of node.
func (a *Auth) authorize(ctx context.Context, u User, verb, node string) (bool, string, error) {
	return a.allowed(ctx, u, authzv1.ResourceAttributes{Verb: verb, Resource: Resource, Subresource: Subresource, Name: node})
}

// allowed asks the API server whether u may do what ra says.
func (a *Auth) allowed(ctx context.Context, u User, ra authzv1.ResourceAttributes) (bool, string, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &ra,
	}}
	res, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("asking the API server whether %s may %s %s: %w", u.Name, ra.Verb, ra.Resource, err)
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

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
