//go:build linux

package ipvs

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// writeDeltas are the writes TestWriteKernelRecorded recorded: the
// render of testView's ipsets and kube-ipvs0 addresses made, then a
// member, an address and a set taken away again (no virtual servers:
// the host's kernel has no IPVS; no rules: iptables-restore is not
// netlink).
func writeDeltas() []*delta {
	target := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	add := &delta{addAddrs: target.Addrs}
	for _, name := range sortedKeys(target.Sets) {
		add.newSets = append(add.newSets, target.Sets[name])
	}
	cluster := target.Sets["KUBE-CLUSTER-IP"]
	del := &delta{
		delMembers: map[string][]string{cluster.Name: {cluster.Members[0].Text}},
		delAddrs:   target.Addrs[:1],
		delSets:    []*IPSet{target.Sets["KUBE-NODE-PORT-TCP"]},
	}
	return []*delta{add, del}
}

// applyWrites applies writeDeltas over d.
func applyWrites(d ipvsnetlink.Dialer) error {
	for _, w := range writeDeltas() {
		if err := applyDeltaWith(context.Background(), d, w, "IPv4", "nf_tables"); err != nil {
			return err
		}
	}
	return nil
}

// TestWriteReplay plays back the writes recorded in a namespace of the
// real kernel: the writer sends the very requests that made the state
// the recording's ipset save and ip addr show print, in order, and the
// kernel acknowledged each. A writer that sends another message, or
// fewer, fails. No root needed.
func TestWriteReplay(t *testing.T) {
	path := filepath.Join(recordDir, "writes-render.rec")
	p := load(t, path)
	if err := applyWrites(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Done(); err != nil {
		t.Fatal(err)
	}
	// The recording is of the state the deltas make.
	text := replays(t, "writes-")[path]
	for _, want := range []string{"add KUBE-CLUSTER-IP 10.96.0.11,tcp:80", "add KUBE-LOOP-BACK 192.0.2.10,tcp:8080,192.0.2.10", "inet 10.96.0.11/32"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recorded state lacks %q:\n%s", want, text)
		}
	}
	for _, gone := range []string{"add KUBE-CLUSTER-IP 10.96.0.10,tcp:80", "KUBE-NODE-PORT-TCP", "inet 10.96.0.10/32"} {
		if strings.Contains(text, gone) {
			t.Errorf("the recorded state has %q:\n%s", gone, text)
		}
	}

	// A member the recording did not add: the request differs.
	rec, err := kernelrec.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	other := writeDeltas()[0]
	first := other.newSets[0]
	other.newSets[0] = &IPSet{Name: first.Name, Type: first.Type, Family: first.Family, Members: slices.Clone(first.Members)}
	last := &other.newSets[0].Members[len(first.Members)-1]
	last.Text = strings.Replace(last.Text, "10.", "11.", 1)
	err = applyDeltaWith(context.Background(), ipvsnetlinktest.Play(rec), other, "IPv4", "nf_tables")
	if err == nil || !strings.Contains(err.Error(), "differs from the recording's") {
		t.Fatalf("a write not recorded: error %v", err)
	}
}
