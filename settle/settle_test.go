package settle

import (
	"testing"
	"time"

	"github.com/svctrace/svctrace/inspect"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// TestSyncTrackerStart bounds the start of kube-proxy's last sync from
// reads of its metrics: one sync between two reads gives its duration,
// several give the earlier read, a restart gives the read before it, and
// the first read or no new sync tells nothing new.
func TestSyncTrackerStart(t *testing.T) {
	var tr Tracker
	tr.Observe(inspect.KubeProxySync{LastSync: at(-10), Syncs: 5, SyncSeconds: 2}, at(0))
	if !tr.Started.IsZero() {
		t.Fatalf("first read: started %v, want unknown", tr.Started)
	}
	tr.Observe(inspect.KubeProxySync{LastSync: at(-10), Syncs: 5, SyncSeconds: 2}, at(5))
	if !tr.Started.IsZero() {
		t.Fatalf("no new sync: started %v", tr.Started)
	}
	// One sync of 1.5 s ended at 8 s: it started at 6.5 s.
	tr.Observe(inspect.KubeProxySync{LastSync: at(8), Syncs: 6, SyncSeconds: 3.5}, at(10))
	if !tr.Started.Equal(at(6.5)) {
		t.Fatalf("one sync: started %v, want %v", tr.Started, at(6.5))
	}
	// Three syncs between reads at 10 s and 20 s: the last started after 10 s.
	tr.Observe(inspect.KubeProxySync{LastSync: at(19), Syncs: 9, SyncSeconds: 5}, at(20))
	if !tr.Started.Equal(at(10)) {
		t.Fatalf("several syncs: started %v, want %v", tr.Started, at(10))
	}
	// A restart (the count fell) after 20 s, with one sync since.
	tr.Observe(inspect.KubeProxySync{LastSync: at(28), Syncs: 1, SyncSeconds: 0.3}, at(30))
	if !tr.Started.Equal(at(20)) {
		t.Fatalf("restart: started %v, want %v", tr.Started, at(20))
	}
}

// TestSettled: which differences are drift and which are kube-proxy's lag.
func TestSettled(t *testing.T) {
	r := Rules{Grace: 2 * time.Minute, Quiet: 5 * time.Second, StallAfter: 3 * time.Minute, Skew: time.Second}
	synced := func(last, queued, started float64) KubeProxy {
		kp := KubeProxy{Readable: true, Sync: inspect.KubeProxySync{LastSync: at(last), LastQueued: at(queued)}}
		if started != 0 {
			kp.Started = at(started)
		}
		return kp
	}
	var never time.Time
	for _, tc := range []struct {
		name               string
		kp                 KubeProxy
		changed, firstSeen time.Time
		now                time.Time
		want               bool
	}{
		{"a sync started after the change", synced(20, 10, 15), at(10), at(12), at(21), true},
		{"the sync started before the change", synced(20, 12, 9), at(10), at(12), at(21), false},
		{"the syncs since the change failed", synced(8, 12, 15), at(10), at(12), at(21), false},
		{"the sync started within the skew", synced(20, 12, 10.5), at(10), at(12), at(21), false},
		{"no sync since the change", synced(5, 10, 3), at(10), at(12), at(21), false},
		{"grace passed, no sync", synced(5, 10, 3), at(10), at(12), at(12 + 120), true},
		{"unchanged, kube-proxy quiet", synced(5, 4, 0), never, at(12), at(12), true},
		{"unchanged, a sync just ended", synced(10, 4, 0), never, at(12), at(12), false},
		{"unchanged, a change waits", synced(5, 8, 0), never, at(12), at(12), false},
		{"unchanged, a sync seen since the start", synced(10, 12, 8), never, at(12), at(12), true},
		{"queued when the agent saw the change, synced after", synced(10.3, 10.05, 10.1), at(10.06), at(12), at(12), true},
		{"queued, the sync started before the queue", synced(10.3, 10.05, 9.9), at(10.06), at(12), at(12), false},
		{"a change long ago, kube-proxy quiet since (a kernel edit)", synced(50, 49, 0), at(10), at(100), at(100), true},
		{"a change long ago, a sync just ended", synced(98, 49, 0), at(10), at(100), at(100), false},
		{"kube-proxy has not seen the change", synced(5, 4, 0), at(10), at(12), at(20), false},
		{"kube-proxy saw the change a moment before the agent", synced(12, 9.5, 0), at(10), at(12), at(20), true},
		{"metrics unreadable", KubeProxy{}, at(10), at(12), at(100), false},
		{"metrics unreadable, grace passed", KubeProxy{}, at(10), at(12), at(12 + 120), true},
		{"first seen late, grace counts from then", KubeProxy{}, at(10), at(100), at(200), false},
	} {
		if got := r.Settled(tc.kp, tc.changed, tc.firstSeen, tc.now); got != tc.want {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLag: lag counts from the last sync while a change waits, and is a
// stall past StallAfter; no lag without a waiting change or metrics.
func TestLag(t *testing.T) {
	r := Rules{StallAfter: time.Minute}
	kp := KubeProxy{Readable: true, Sync: inspect.KubeProxySync{LastSync: at(0), LastQueued: at(5)}}
	if d, stalled := r.Lag(kp, at(30)); d != 30*time.Second || stalled {
		t.Errorf("pending 30 s: %v %v", d, stalled)
	}
	if d, stalled := r.Lag(kp, at(61)); d != 61*time.Second || !stalled {
		t.Errorf("pending 61 s: %v %v", d, stalled)
	}
	kp.Sync.LastQueued = at(-1)
	if d, stalled := r.Lag(kp, at(600)); d != 0 || stalled {
		t.Errorf("nothing pending: %v %v", d, stalled)
	}
	if d, stalled := r.Lag(KubeProxy{}, at(600)); d != 0 || stalled {
		t.Errorf("unreadable: %v %v", d, stalled)
	}
}
