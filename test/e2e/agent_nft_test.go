//go:build linux

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAgentNFTables runs the node agent on node1 in nftables mode, where
// each of its checks reads the ruleset with the elements of the anonymous
// sets it read before (the kernel cannot change them): kube-proxy
// replacing its rules, and their sets, over many syncs is never drift;
// an endpoint taken out of a Service's vmap with kube-proxy stopped (a new
// rule, whose new set may take the old one's name) is drift once the
// grace period has passed; kube-proxy repairs it.
func TestAgentNFTables(t *testing.T) {
	c := startMatrix(t, "nftables", "")
	a := startAgent(t, c, "node1", "--interval", "1s", "--debounce", "100ms", "--min-gap", "300ms", "--grace-period", "8s", "--endpoint-labels")
	healthy := func(m string) bool {
		return sumOf(m, "svctrace_last_check_success") == 1 && sumOf(m, "svctrace_drift_findings") == 0 &&
			sumOf(m, "svctrace_pending_findings") == 0
	}
	m := a.waitMetrics(t, 60*time.Second, "ready and healthy", healthy)
	if !strings.Contains(m, `mode="nftables"`) {
		t.Fatalf("not checking nftables mode:\n%s", grepSvctrace(m))
	}

	// Services come and go, and the endpoints of one with them: every sync
	// writes new rules and sets, the names of sets deleted taken again.
	for i := range 4 {
		c.Apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: churn-%d, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
`, i))
	}
	if err := c.WaitSynced("node1"); err != nil {
		t.Fatal(err)
	}
	checks := sumOf(a.waitMetrics(t, 30*time.Second, "the new Services checked", healthy), "svctrace_checks_total")
	for i := range 3 {
		if err := c.Delete("Service", "default", fmt.Sprintf("churn-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitSynced("node1"); err != nil {
		t.Fatal(err)
	}
	a.waitMetrics(t, 30*time.Second, "settled after the changes", func(m string) bool {
		return healthy(m) && sumOf(m, "svctrace_checks_total") > checks+2
	})

	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	web1 := c.pods["web-1"].IP
	removeEndpointNFT(t, c, "default/web/tcp/http", web1)
	m = a.waitMetrics(t, 40*time.Second, "drift after the grace period", func(m string) bool {
		return strings.Contains(m, `svctrace_drift_findings{finding="MissingEndpoint"} 1`)
	})
	if !strings.Contains(m, `svctrace_endpoint_drift_findings{endpoint="`+web1+`:8080",finding="MissingEndpoint",namespace="default",service="web"} 1`) {
		t.Errorf("the endpoint taken out is not named:\n%s", grepSvctrace(m))
	}
	if err := c.startProxy("node1"); err != nil {
		t.Fatal(err)
	}
	// kube-proxy's zone race (see relabelZones) once put default/zoned's
	// other zone in its map: a true StaleEndpoint, and a CI run failed.
	c.relabelZones(t, "node1")
	a.waitMetrics(t, 30*time.Second, "repaired by kube-proxy", healthy)
}
