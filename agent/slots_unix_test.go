//go:build unix

package agent

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSlots: N reads take the N slots; one more, which finds them taken,
// is refused with "the agent is busy: N reads running" once it has waited,
// and one that waits gets the slot the first read to end lets go.
func TestSlots(t *testing.T) {
	s := Slots{Dir: t.TempDir(), Kind: "read", N: 2}
	var held []func()
	for i := range s.N {
		release, err := s.Take(t.Context())
		if err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
		held = append(held, release)
	}
	_, err := s.Take(t.Context())
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "the agent is busy: 2 reads running") {
		t.Fatalf("a third read while two run: %v", err)
	}
	waiting := s
	waiting.Wait = time.Hour
	got := make(chan error, 1)
	go func() {
		release, err := waiting.Take(t.Context())
		if err == nil {
			release()
		}
		got <- err
	}()
	held[0]()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("a read waiting for a slot: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a read waiting for a slot did not get the one let go")
	}
	held[1]()
}

// TestSlotsMissingDir: a slot that cannot be made is an error naming it,
// not a read let through.
func TestSlotsMissingDir(t *testing.T) {
	s := Slots{Dir: t.TempDir() + "/nothing", Kind: "read", N: 2}
	if _, err := s.Take(t.Context()); err == nil || !strings.Contains(err.Error(), "read slot") {
		t.Errorf("slots in a missing directory: %v", err)
	}
}
