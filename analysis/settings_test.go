package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
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
		"healthy":                       {ReadAt: at, LastSync: at.Add(-time.Second), LastQueued: at.Add(-2 * time.Second), Healthz: 200, RestoreFailures: 3},
		"/healthz not read":             {ReadAt: at, LastSync: at.Add(-5 * time.Minute), LastQueued: at.Add(-4 * time.Minute)},
		"unhealthy, nothing queued yet": {ReadAt: at, LastSync: at.Add(-time.Minute), LastQueued: at.Add(-2 * time.Minute), Healthz: 503},
	} {
		if fs := syncChecks("node1", &s); len(fs) != 0 {
			t.Errorf("%s: %+v", name, fs)
		}
	}
	if fs := syncChecks("node1", nil); len(fs) != 0 {
		t.Errorf("not read: %+v", fs)
	}
}
