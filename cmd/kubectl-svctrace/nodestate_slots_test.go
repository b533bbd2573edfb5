//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/svctrace/svctrace/agent"
)

// TestNodeStateBusy: while as many reads as there are slots run in the
// agent's container, node-state refuses another, saying so, before it
// reads anything of the node.
func TestNodeStateBusy(t *testing.T) {
	dir := t.TempDir()
	slots := agent.Slots{Dir: dir, Kind: "read", N: 2}
	for range slots.N {
		release, err := slots.Take(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	out, errOut, code := run(t, "node-state", "--node", "node1", "--slots-dir", dir, "--slots", "2", "--slot-wait", "0s")
	if code != exitError || out != "" || !strings.Contains(errOut, "the agent is busy: 2 reads running") {
		t.Errorf("node-state while 2 reads run: exit %d, %d bytes out\n%s", code, len(out), errOut)
	}
}
