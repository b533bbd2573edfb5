package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// cliRoles decodes cli-rbac.yaml's roles by namespace/name ("" namespace
// for ClusterRoles).
func cliRoles(t *testing.T) map[string][]rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile("cli-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]rbacv1.PolicyRule{}
	for i, doc := range strings.Split(string(b), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("cli-rbac.yaml, object %d: %v", i+1, err)
		}
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			out[o.Name] = o.Rules
		case *rbacv1.Role:
			out[o.Namespace+"/"+o.Name] = o.Rules
		default:
			t.Errorf("cli-rbac.yaml, object %d: a %T", i+1, obj)
		}
	}
	return out
}

// grants reports whether rules allow verb on resource.
func grants(rules []rbacv1.PolicyRule, verb, resource string) bool {
	for _, r := range rules {
		if (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) && (slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) {
			return true
		}
	}
	return false
}

// TestCLIRoles: reading never grants repair. The reading roles hold no
// exec and no write; repair is nodes/svctrace update and nothing else; the
// helper role, which execs, is apart.
func TestCLIRoles(t *testing.T) {
	roles := cliRoles(t)
	for _, name := range []string{"svctrace-user", "svctrace/svctrace-user"} {
		rules, ok := roles[name]
		if !ok {
			t.Fatalf("no role %s", name)
		}
		for _, r := range rules {
			for _, v := range r.Verbs {
				if !slices.Contains([]string{"get", "list", "watch"}, v) {
					t.Errorf("%s may %s %v: a reading role must not write", name, v, r.Resources)
				}
			}
			for _, res := range r.Resources {
				if strings.HasPrefix(res, "pods/") || res == "*" {
					t.Errorf("%s holds %s: reading must not need exec, attach or proxy into the agent", name, res)
				}
			}
		}
	}
	if !grants(roles["svctrace-user"], "get", "nodes/svctrace") || grants(roles["svctrace-user"], "update", "nodes/svctrace") {
		t.Error("svctrace-user must get nodes/svctrace, and not update it")
	}
	repair := roles["svctrace-repair"]
	if len(repair) != 1 || !slices.Equal(repair[0].Resources, []string{"nodes/svctrace"}) || !grants(repair, "update", "nodes/svctrace") {
		t.Errorf("svctrace-repair: %+v, want get and update of nodes/svctrace only", repair)
	}
	if !grants(roles["svctrace-helper"], "create", "pods/exec") {
		t.Error("svctrace-helper: --helper-pod needs create of pods/exec")
	}
}
