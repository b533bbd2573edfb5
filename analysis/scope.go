package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/internal/suggest"
	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// ServiceRef names a Service, optionally one port of it.
type ServiceRef struct {
	Namespace, Name, Port string
}

func (r ServiceRef) String() string {
	s := r.Namespace + "/" + r.Name
	if r.Port != "" {
		s += ":" + r.Port
	}
	return s
}

// ParseServiceRef reads [NS/]NAME[:PORT].
func ParseServiceRef(s, defaultNS string) (ServiceRef, error) {
	var r ServiceRef
	rest := s
	if ns, n, ok := strings.Cut(s, "/"); ok {
		r.Namespace, rest = ns, n
	} else {
		r.Namespace = defaultNS
	}
	r.Name, r.Port, _ = strings.Cut(rest, ":")
	if r.Namespace == "" || r.Name == "" || strings.ContainsAny(r.Name, "/ ") {
		return r, fmt.Errorf("%q is not a Service reference: want [NAMESPACE/]NAME[:PORT]", s)
	}
	return r, nil
}

// Matches reports whether a ServicePortName ("ns/name:port") is of the
// referenced Service (and port, when the reference names one).
func (r ServiceRef) Matches(spn string) bool {
	n := model.ParseServicePortName(spn)
	return n.Namespace == r.Namespace && n.Name == r.Name && (r.Port == "" || n.Port == r.Port)
}

// Resolve checks a reference against the API objects and returns it in
// canonical form: a port given by number is replaced by the port's name
// (or dropped for a Service's only, unnamed port). A namespace without
// Services, a Service or a port that does not exist is an error that names
// the close matches. Without API objects (a bare dump) the reference is
// returned as it is, to be matched against the rules.
func (r ServiceRef) Resolve(c *snapshot.Cluster) (ServiceRef, error) {
	if c == nil {
		return r, nil
	}
	if err := checkNamespace(c, r.Namespace); err != nil {
		return r, err
	}
	var svc *corev1.Service
	for i := range c.Services {
		if s := &c.Services[i]; s.Namespace == r.Namespace && s.Name == r.Name {
			svc = s
		}
	}
	var names, elsewhere []string
	for _, k := range allServices(c) {
		switch {
		case k.Namespace == r.Namespace && k.Name != r.Name:
			names = append(names, k.Name)
		case k.Namespace != r.Namespace && k.Name == r.Name:
			elsewhere = append(elsewhere, k.Namespace)
		}
	}
	if svc == nil {
		msg := fmt.Sprintf("service %s/%s not found", r.Namespace, r.Name)
		if len(elsewhere) > 0 {
			sort.Strings(elsewhere)
			return r, fmt.Errorf("%s; a Service %s exists in namespace %s (use NAMESPACE/NAME or -n)", msg, r.Name, strings.Join(elsewhere, ", "))
		}
		return r, fmt.Errorf("%s; %s", msg, suggest.Hint(r.Name, names, "Services in namespace "+r.Namespace))
	}
	if r.Port == "" {
		return r, nil
	}
	var ports []string
	num, numErr := strconv.Atoi(r.Port)
	for _, p := range svc.Spec.Ports {
		if p.Name == r.Port || numErr == nil && int(p.Port) == num {
			r.Port = p.Name
			return r, nil
		}
		if p.Name != "" {
			ports = append(ports, p.Name)
		}
	}
	var all []string
	for _, p := range svc.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		d := fmt.Sprintf("%d/%s", p.Port, proto)
		if p.Name != "" {
			d = p.Name + " (" + d + ")"
		}
		all = append(all, d)
	}
	msg := fmt.Sprintf("service %s/%s has no port %q", r.Namespace, r.Name, r.Port)
	if m := suggest.Close(r.Port, ports, 3); len(m) > 0 {
		return r, fmt.Errorf("%s; did you mean %s? (ports: %s)", msg, strings.Join(m, " or "), strings.Join(all, ", "))
	}
	return r, fmt.Errorf("%s; its ports: %s", msg, strings.Join(all, ", "))
}

// checkNamespace fails, with the close matches, when no Service of the API
// objects is in namespace ns.
func checkNamespace(c *snapshot.Cluster, ns string) error {
	if c == nil {
		return nil
	}
	var all []string
	for _, k := range allServices(c) {
		all = append(all, k.Namespace)
	}
	return namespaceAmong(ns, all, "")
}

// namespaceAmong is nil when ns is one of namespaces (each Service's, in
// any order), else the error with the close matches; where says where the
// Services were looked for.
func namespaceAmong(ns string, namespaces []string, where string) error {
	if slices.Contains(namespaces, ns) {
		return nil
	}
	slices.Sort(namespaces)
	return fmt.Errorf("namespace %q has no Service%s; %s", ns, where, suggest.Hint(ns, slices.Compact(namespaces), "namespaces with Services"))
}

// checkNamedInRules fails, with the close matches, when no frontend of a
// table (the rules of a bare dump, read without API objects) names the
// referenced Service.
func (r ServiceRef) checkNamedInRules(t *behavior.Table) error {
	var named []string
	for _, f := range t.Frontends {
		if r.Matches(f.Service) {
			return nil
		}
		if f.Service != "" {
			base := model.ParseServicePortName(f.Service).Service()
			named = append(named, base)
		}
	}
	if len(named) == 0 {
		return nil // rules without comments: only chain hashes could tell
	}
	return fmt.Errorf("no rule names service %s; %s", r, suggest.Hint(r.Namespace+"/"+r.Name, named, "Services named by the rules"))
}

// Scope is the part of a node a drift report is about: one Service (and
// port), one namespace, or, zero, everything kube-proxy programs there.
type Scope struct {
	Service   *ServiceRef
	Namespace string
	// Current says Namespace was not asked for: it is the kubeconfig's
	// current namespace, the default scope as in kubectl.
	Current bool
}

// Wants reports whether a Service port name ("ns/name:port") is in scope.
// What names no Service (a leftover of another mode, a rule no Service
// owns) is the node's, in the scope of every namespace.
func (s Scope) Wants(spn string) bool {
	switch {
	case s.Service != nil:
		return s.Service.Matches(spn)
	case s.Namespace != "":
		return spn == "" || strings.HasPrefix(spn, s.Namespace+"/")
	}
	return true
}

// String names the scope for the report ("namespace default"), empty when
// it is a Service, which the user named, or everything.
func (s Scope) String() string {
	if s.Service == nil && s.Namespace != "" {
		return "namespace " + s.Namespace
	}
	return ""
}

// namespaceError says a namespace has no Service, and, when the user did
// not name it, where the namespace came from and how to widen the scope.
func (s Scope) namespaceError(err error) error {
	if err == nil || !s.Current {
		return err
	}
	return fmt.Errorf("%w (%q is the kubeconfig's current namespace: -n NAMESPACE names another, -A checks every namespace)", err, s.Namespace)
}

// resolve checks the scope against the API objects: a typo is an error
// with the close matches, never "no drift".
func (s Scope) resolve(c *snapshot.Cluster) (Scope, error) {
	if s.Service != nil {
		ref, err := s.Service.Resolve(c)
		if err != nil {
			return s, err
		}
		s.Service = &ref
		return s, nil
	}
	if s.Namespace != "" {
		return s, s.namespaceError(checkNamespace(c, s.Namespace))
	}
	return s, nil
}

// allServices names every Service of the cluster, also where c holds only
// some of them (snapshot.Partial).
func allServices(c *snapshot.Cluster) []types.NamespacedName {
	var out []types.NamespacedName
	if c.Partial != nil {
		for _, k := range c.Partial.ServiceNames {
			ns, name, _ := strings.Cut(k, "/")
			out = append(out, types.NamespacedName{Namespace: ns, Name: name})
		}
		return out
	}
	for i := range c.Services {
		out = append(out, types.NamespacedName{Namespace: c.Services[i].Namespace, Name: c.Services[i].Name})
	}
	return out
}
