//go:build linux

// Command pause is the sandbox process of the lab's Pods (the lab's "pause" image): it holds
// the Pod's namespaces, reaps the children it inherits when it is PID 1, and exits on SIGTERM
// or SIGINT. Standard library only, built static.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
