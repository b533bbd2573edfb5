package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncChecks: kube-proxy is reported as not applying changes only on
// its own word (/healthz 503) with a change queued after its last sync;
// the failed writes it counts are the why.
func TestSyncChecks(t *testing.T) {
	at := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	stuck := snapshot.ProxySync{ReadAt: at, LastSync: at.Add(-5 * time.Minute), LastQueued: at.Add(-4 * time.Minute), Healthz: 503, RestoreFailures: 12}
	fs := syncChecks("node1", &stuck)
	if len(fs) != 1 || fs[0].Type != behavior.KubeProxyNotSyncing || !strings.Contains(fs[0].Message, "12 failed iptables-restores") ||
		!strings.Contains(fs[0].Message, "a change has waited 4m0s") {
		t.Errorf("a stuck kube-proxy whose writes fail: %+v", fs)
	}
	for name, s := range map[string]snapshot.ProxySync{
		"healthy":            {ReadAt: at, LastSync: at.Add(-time.Second), LastQueued: at.Add(-2 * time.Second), Healthz: 200, RestoreFailures: 3},
		"/healthz not read":  {ReadAt: at, LastSync: at.Add(-5 * time.Minute), LastQueued: at.Add(-4 * time.Minute)},
		"node being deleted": {ReadAt: at, LastSync: at.Add(-time.Minute), LastQueued: at.Add(-30 * time.Second), Healthz: 503, NodeIneligible: true},
	} {
		if fs := syncChecks("node1", &s); len(fs) != 0 {
			t.Errorf("%s: %+v", name, fs)
		}
	}
	// Before 1.33 one family's syncs can hide the other's: /healthz
	// decides.
	shared := snapshot.ProxySync{ReadAt: at, LastSync: at.Add(-time.Second), LastQueued: at.Add(-2 * time.Minute), Healthz: 503}
	if fs := syncChecks("node1", &shared); len(fs) != 1 || !strings.Contains(fs[0].Message, "shared by both IP families") {
		t.Errorf("a stuck family behind the other's syncs: %+v", fs)
	}
	if fs := syncChecks("node1", nil); len(fs) != 0 {
		t.Errorf("not read: %+v", fs)
	}
}

// TestWatchChecks: an endpoint leaves default/web's EndpointSlice two
// minutes after kube-proxy last queued a change, and the node's rules
// still send to it: with /healthz 200 (nothing waits), kube-proxy never
// saw the change. The same difference with the change older than its
// last queued one is no sign of a frozen watch.
func TestWatchChecks(t *testing.T) {
	base := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	run := func(changedAt time.Time) []behavior.Finding {
		s, err := snapshot.Load("../examples/lab-iptables-v1.36.3.snapshot.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.Cluster.EndpointSlices {
			e := &s.Cluster.EndpointSlices[i]
			if e.Name != "web-1" {
				continue
			}
			e.Endpoints = e.Endpoints[:2]
			e.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: changedAt}}}
		}
		ns, _ := s.Node("node1")
		ns.KubeProxy.Sync = &snapshot.ProxySync{ReadAt: base.Add(5 * time.Minute), LastSync: base, LastQueued: base, Healthz: 200}
		rep, err := Drift(s, DriftOptions{Family: "IPv4", Nodes: []string{"node1"}})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Findings
	}
	fs := run(base.Add(2 * time.Minute))
	var types []string
	for _, f := range fs {
		types = append(types, f.Type)
	}
	if strings.Join(types, " ") != "KubeProxyNotSyncing StaleEndpoint" || !strings.Contains(fs[0].Message, "default/web at 2026-11-29T04:02:00Z") {
		t.Errorf("a change kube-proxy never queued: %+v", fs)
	}
	fs = run(base.Add(-time.Minute))
	if len(fs) != 1 || fs[0].Type != behavior.StaleEndpoint {
		t.Errorf("a change before kube-proxy's last queued one: %+v", fs)
	}
}
