package deploy_test

import (
	"os"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// that names the scrape job.
type serviceMonitor struct {
	Spec struct {
		// JobLabel: the job is the value of this label of the selected
		// Service; empty, or a label the Service lacks, the job is the
		// Service's name (the Operator's ServiceMonitorSpec.jobLabel).
		JobLabel string `json:"jobLabel"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

// operatorJob is the job label the Prometheus Operator gives the agents'
// metrics through the shipped ServiceMonitor and the agent's Service.
func operatorJob(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("prometheus-operator/servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm serviceMonitor
	if err := yaml.Unmarshal(b, &sm); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(sm.Spec.Selector.MatchLabels)
	var svc *corev1.Service
	for _, obj := range agentObjects(t) {
		if s, ok := obj.(*corev1.Service); ok && sel.Matches(labels.Set(s.Labels)) {
			if svc != nil {
				t.Fatalf("the ServiceMonitor selects two Services: %s and %s", svc.Name, s.Name)
			}
			svc = s
		}
	}
	if svc == nil {
		t.Fatal("the ServiceMonitor selects no Service of agent.yaml")
	}
	if v, ok := svc.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel != "" && ok {
		return v
	}
	return svc.Name
}

// TestAlertsMatchTheScrapeJob: every job an alert names is the job the
// agents are scraped as, through the Prometheus Operator's objects and
// through the static configuration of docs/cluster.md (job_name
// svctrace-agent), so that SvctraceAgentDown can fire.
func TestAlertsMatchTheScrapeJob(t *testing.T) {
	job := operatorJob(t)
	if job != "svctrace-agent" {
		t.Errorf("the Prometheus Operator scrapes the agents as job %q, the static configuration as svctrace-agent", job)
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`job\s*=~?\s*"([^"]*)"`).FindAllStringSubmatch(string(b), -1)
	if len(named) == 0 {
		t.Fatalf("no alert of %s names the job: SvctraceAgentDown needs it", rulesFile)
	}
	for _, m := range named {
		if m[1] != job {
			t.Errorf("%s names job %q; the agents are scraped as %q", rulesFile, m[1], job)
		}
	}
}
