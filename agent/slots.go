package agent

import (
	"fmt"
	"time"
)

// Slots bound how many processes of one kind run at once in the agent's
// container: the reads the agent's API starts (node-state), each holding
// the node's whole state in memory under the container's memory limit.
// Each process takes one of N slot files in Dir with flock(2), which the
// kernel lets go when the process ends, however it ends; a process that
// finds every slot taken waits up to Wait, then gives up with a BusyError.
type Slots struct {
	// Dir holds the slot files; it must exist (the agent's /run/svctrace).
	Dir string
	// Kind names the processes ("read"), in the files' names and errors.
	Kind string
	N    int
	Wait time.Duration
}

// DefaultReadSlots are the slots of node-state in the agent's container:
// two reads at once beside the agent's own check, and a third waits up to
// a minute.
func DefaultReadSlots() Slots {
	return Slots{Dir: "/run/svctrace", Kind: "read", N: 2, Wait: time.Minute}
}

// BusyError says every slot stayed taken for as long as one was waited for.
type BusyError struct {
	Kind string
	N    int
	Wait time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("the agent is busy: %d %ss running (waited %v for one to end); try again later", e.N, e.Kind, e.Wait)
}

// slotPoll is how often a waiting process tries the slots again.
const slotPoll = 100 * time.Millisecond
