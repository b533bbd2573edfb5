//go:build linux

package ipvs

import (
	"testing"

	"github.com/svctrace/svctrace/internal/netns"
	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// TestWriteKernelRecorded applies writeDeltas in a namespace of the real
// kernel (kube-ipvs0 a bridge: the host's kernel has no dummy
// interfaces) and checks what ipset save and ip addr show print then;
// with SVCTRACE_RECORD=1 it keeps the conversation and their output, for
// TestWriteReplay.
func TestWriteKernelRecorded(t *testing.T) {
	ns := netnstest.New(t, "ipvsrec", "ipset")
	netnstest.Run(t, ns, "", "ip", "link", "add", Dummy, "type", "bridge")
	rec := ipvsnetlinktest.NewRecorder(ipvsnetlink.Kernel{})
	if err := netns.Run("/run/netns/"+ns, func() error { return applyWrites(rec) }); err != nil {
		t.Fatal(err)
	}
	saved := netnstest.Run(t, ns, "", "ipset", "save")
	bound := netnstest.Run(t, ns, "", "ip", "-o", "addr", "show", "dev", Dummy)
	sets, err := ParseIPSets(saved)
	if err != nil {
		t.Fatal(err)
	}
	add, del := writeDeltas()[0], writeDeltas()[1]
	have := map[string]bool{}
	for _, s := range sets.Sets {
		for _, m := range s.Members {
			have[s.Name+" "+m.Text] = true
		}
	}
	for _, s := range add.newSets {
		for _, m := range s.Members {
			gone := s.Name == del.delSets[0].Name || del.delMembers[s.Name] != nil && del.delMembers[s.Name][0] == m.Text
			if have[s.Name+" "+m.Text] == gone {
				t.Errorf("ipset save: member %s %s there: %v", s.Name, m.Text, !gone)
			}
		}
	}
	for i, a := range add.addAddrs {
		if got := containsAddr(bound, a.String()); got != (i > 0) {
			t.Errorf("ip addr show: %s bound: %v", a, got)
		}
	}
	saveRecording(t, "writes-render", rec, "writes of the render of testView's ipsets and kube-ipvs0 (a bridge) addresses, then a member, an address and a set removed (writeDeltas)",
		"ipset save; ip -o addr show dev "+Dummy, saved+bound)
}
