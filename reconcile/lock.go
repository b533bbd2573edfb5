package reconcile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultLockFile is the node-wide lock of reconcile rules --apply and
// reconcile rollback: in the state directory the agent's Pod shares with
// the node (deploy/agent.yaml), so a write on the node and one through the
// agent exclude each other too.
const DefaultLockFile = "/var/lib/svctrace/apply.lock"

// NodeLock is the node-wide lock held while a repair or a rollback
// writes: an exclusive flock on a file, which the kernel drops when the
// process ends, however it ends.
type NodeLock struct {
	f *os.File
}

// ErrLocked is the error of LockNode when another process holds the lock.
var ErrLocked = errors.New("another reconcile --apply is running")

// LockNode takes the lock at path ("": DefaultLockFile) without waiting:
// while another process holds it, it fails with ErrLocked, naming that
// process's pid as the file tells it. The holder's pid is written to the
// file.
func LockNode(path string) (*NodeLock, error) {
	if path == "" {
		path = DefaultLockFile
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("the node's reconcile lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the node's reconcile lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errHeld) {
			return nil, fmt.Errorf("%w (%s; lock %s)", ErrLocked, holder(f), path)
		}
		return nil, fmt.Errorf("the node's reconcile lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &NodeLock{f: f}, nil
}

// holder says which process holds the lock, as its file tells.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return "pid unknown"
	}
	return "pid " + strconv.Itoa(pid)
}

// Unlock releases the lock. The pid stays in the file: the next holder
// writes its own.
func (l *NodeLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
