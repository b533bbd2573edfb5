//go:build linux

// Package netns runs code in another network namespace, on a thread of
// its own: sockets opened there stay in it, and /proc/thread-self/net
// shows it.
package netns

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Run runs fn on an OS thread that has joined the network namespace at
// path (/run/netns/NAME, /proc/PID/ns/net). fn runs on another goroutine,
// locked to its thread; goroutines it starts are not in the namespace, but
// sockets it opens stay there. The thread goes back to its namespace
// afterwards; if that fails the thread is discarded. A panic in fn is
// returned as an error.
func Run(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: %w", err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		err = runGuarded(fn)
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// Exit still locked: the runtime throws the thread away.
			errc <- fmt.Errorf("restore netns after %s: %w", path, rerr)
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

func runGuarded(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}
