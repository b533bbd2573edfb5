// Package deploy holds the manifests of svctrace's node agent; its tests
// check them.
package deploy_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/test/lab"

	"github.com/svctrace/svctrace/internal/slowtest"
)

var update = flag.Bool("update", false, "rewrite prometheus-operator/prometheusrule.yaml from prometheus/svctrace-rules.yml")

const (
	rulesFile = "prometheus/svctrace-rules.yml"
	ruleCR    = "prometheus-operator/prometheusrule.yaml"
)

// prometheusRule is the PrometheusRule of the rules file's groups.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	cr := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{"name": "svctrace", "namespace": "svctrace",
			"labels": map[string]any{"app.kubernetes.io/name": "svctrace"}},
		"spec": map[string]any{"groups": rules.Groups},
	}
	out, err := yaml.Marshal(cr)
	if err != nil {
		t.Fatal(err)
	}
	head := "# Generated from ../prometheus/svctrace-rules.yml by `go test ./deploy -update`: edit that file.\n"
	return append([]byte(head), out...)
}

// TestPrometheusRuleMatchesRulesFile: the Prometheus Operator's copy of the
// alerts is the rules file's, word for word.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	want := prometheusRule(t)
	if *update {
		if err := os.WriteFile(ruleCR, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(ruleCR)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not %s's groups: run go test ./deploy -update", ruleCR, rulesFile)
	}
}

// TestRulesWithPromtool: Prometheus's own checker accepts the rules and
// the configuration of a Prometheus without service discovery, and
// its unit tests of every alert (prometheus/svctrace-rules_test.yml) pass.
func TestRulesWithPromtool(t *testing.T) {
	slowtest.Need(t, "builds promtool")
	bin, err := lab.PrometheusTools(t.Context())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// check config reads the rule files the configuration names too.
	for _, args := range [][]string{{"check", "rules", "svctrace-rules.yml"}, {"test", "rules", "svctrace-rules_test.yml"},
		{"check", "config", "prometheus.yml"}} {
		cmd := exec.Command(filepath.Join(bin, "promtool"), args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestNetworkPolicy: networkpolicy.yaml selects the agent's Pods, lets only
// a namespace selected by label reach their metrics port, leaves the
// authenticated API port open to the CLI, and says that it may not apply
// to a host-network Pod and what to do then.
func TestNetworkPolicy(t *testing.T) {
	b, err := os.ReadFile("networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	np := &networkingv1.NetworkPolicy{}
	if err := yaml.UnmarshalStrict(b, np); err != nil {
		t.Fatalf("networkpolicy.yaml: %v", err)
	}
	if np.APIVersion != "networking.k8s.io/v1" || np.Kind != "NetworkPolicy" {
		t.Fatalf("networkpolicy.yaml holds a %s %s", np.APIVersion, np.Kind)
	}
	var ds *appsv1.DaemonSet
	for _, o := range agentObjects(t) {
		if d, ok := o.(*appsv1.DaemonSet); ok {
			ds = d
		}
	}
	if ds == nil {
		t.Fatal("agent.yaml has no DaemonSet")
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || np.Namespace != ds.Namespace || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) || sel.Empty() {
		t.Errorf("the policy (%s, %v) does not select the agent's Pods (%s, %v): %v", np.Namespace, sel, ds.Namespace, ds.Spec.Template.Labels, err)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy types %v, want Ingress", np.Spec.PolicyTypes)
	}
	ports := map[string]int32{}
	for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	covers := func(r networkingv1.NetworkPolicyIngressRule, port int32) bool {
		return len(r.Ports) == 0 || slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.IntValue() == int(port)
		})
	}
	metricsFrom, apiOpen := 0, false
	for _, r := range np.Spec.Ingress {
		if covers(r, ports["metrics"]) {
			if len(r.From) == 0 {
				t.Errorf("rule %+v lets anyone reach the metrics port %d", r, ports["metrics"])
			}
			for _, peer := range r.From {
				if peer.NamespaceSelector == nil || len(peer.NamespaceSelector.MatchLabels)+len(peer.NamespaceSelector.MatchExpressions) == 0 || peer.IPBlock != nil {
					t.Errorf("the metrics port is reached from %+v, want a namespace selected by label", peer)
				}
				metricsFrom++
			}
		}
		if covers(r, ports["api"]) && len(r.From) == 0 {
			apiOpen = true
		}
	}
	if metricsFrom == 0 {
		t.Errorf("no namespace may reach the metrics port %d", ports["metrics"])
	}
	if !apiOpen {
		t.Errorf("the API port %d is closed: the CLI reaches it from anywhere and the agent authenticates every call", ports["api"])
	}
	for _, said := range []string{"hostNetwork", "--listen-address", "kube-rbac-proxy", "firewall"} {
		if !strings.Contains(string(b), said) {
			t.Errorf("networkpolicy.yaml does not mention %s: that the policy may not apply to a host-network Pod, and what to do then", said)
		}
	}
}
