//go:build !unix

package reconcile

import (
	"errors"
	"os"
)

// errHeld is tryLock's error when another process holds the lock.
var errHeld = errors.New("the lock is held")

// tryLock refuses: a repair writes a Linux node's rules, so it runs only
// where flock(2) is; elsewhere the CLI reaches a node through its agent.
func tryLock(*os.File) error {
	return errors.New("a repair runs on a Linux node only (here: no flock)")
}
