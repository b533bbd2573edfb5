package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svctrace/svctrace/behavior"
)

// TestReportOverSocket: the report served on the socket is the status's,
// the socket is its owner's only, and a reader names the socket it cannot
// reach.
func TestReportOverSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "agent.sock")
	good := &Check{At: t0, Frontends: 9, KubeProxy: KubeProxy{Mode: "nftables", Version: "v1.36.3"},
		Drift:   []behavior.Finding{{Type: behavior.MissingEndpoint, Service: "a/b:http", Observed: "client 10.0.0.1"}},
		Pending: []behavior.Finding{{Type: behavior.MissingFrontend, Service: "a/c:http"}}}
	st := &Status{Node: "node1", Synced: true, Good: good, Last: &Check{At: t0.Add(time.Minute), Err: errors.New("boom")}}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- ServeSocket(ctx, path, func() *Status { return st }) }()
	var out bytes.Buffer
	var err error
	for range 100 {
		if err = ReadReport(t.Context(), path, &out); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Ready || r.Node != "node1" || r.Frontends != 9 || len(r.Drift) != 1 || len(r.Pending) != 1 || r.Error != "boom" || r.Mode != "nftables" {
		t.Errorf("report %+v", r)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, %v", fi.Mode(), err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if err := ReadReport(t.Context(), path, &out); err == nil || !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Errorf("no agent: %v", err)
	}
}

// TestNodeReportFindings: an unreadable node keeps its error; a ready
// one's failed last check and stalled kube-proxy become notes.
func TestNodeReportFindings(t *testing.T) {
	f := NodeReport{Node: "n", Err: errors.New("x"), Bytes: 3}.Findings()
	if f.Err == nil || f.BytesRead != 3 {
		t.Errorf("%+v", f)
	}
	f = NodeReport{Node: "n", Report: Report{Ready: true, Mode: "iptables", Frontends: 2, Error: "boom", CheckedAt: t0,
		KubeProxyStalled: true, KubeProxyLag: 5 * time.Minute, Pending: []behavior.Finding{{}, {}}}}.Findings()
	if f.Err != nil || f.Pending != 2 || f.Frontends != 2 || len(f.Notes) != 2 {
		t.Errorf("%+v", f)
	}
}
