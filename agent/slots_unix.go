//go:build unix

package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Take takes a free slot, waiting up to s.Wait for one, and returns the
// function that frees it.
func (s Slots) Take(ctx context.Context) (func(), error) {
	if s.N <= 0 {
		return nil, fmt.Errorf("%d %s slots: want 1 or more", s.N, s.Kind)
	}
	deadline := time.Now().Add(s.Wait)
	for {
		for i := range s.N {
			release, err := s.try(filepath.Join(s.Dir, fmt.Sprintf("%s-%d.lock", s.Kind, i)))
			if err != nil || release != nil {
				return release, err
			}
		}
		if !time.Now().Before(deadline) {
			return nil, &BusyError{Kind: s.Kind, N: s.N, Wait: s.Wait}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a %s slot: %w", s.Kind, ctx.Err())
		case <-time.After(min(slotPoll, time.Until(deadline))):
		}
	}
}

// try locks the slot file at path without waiting: its release, nil when
// another process holds it, or an error.
func (s Slots) try(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the %s slot: %w", s.Kind, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		// Closing the file lets the lock go; so does the process's end.
		return func() { _ = f.Close() }, nil
	}
	_ = f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, nil
	}
	return nil, fmt.Errorf("locking the %s slot %s: %w", s.Kind, path, err)
}
