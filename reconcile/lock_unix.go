//go:build unix

package reconcile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errHeld is tryLock's error when another process holds the lock.
var errHeld = unix.EWOULDBLOCK

// tryLock takes an exclusive flock(2) on f without waiting.
func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errHeld
	}
	return err
}
