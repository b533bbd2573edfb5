// Package deploy holds the manifests of svctrace's node agent; its tests
// check them.
package deploy_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/test/lab"
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

// TestRulesWithPromtool: Prometheus's own checker accepts the rules, and
// its unit tests of every alert (prometheus/svctrace-rules_test.yml) pass.
func TestRulesWithPromtool(t *testing.T) {
	bin, err := lab.PrometheusTools(t.Context())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, args := range [][]string{{"check", "rules", "svctrace-rules.yml"}, {"test", "rules", "svctrace-rules_test.yml"}} {
		cmd := exec.Command(filepath.Join(bin, "promtool"), args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
