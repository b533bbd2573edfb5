//go:build linux

// Package procgroup starts a command in a process group of its own, so a
// signal to svctrace's group (a terminal's interrupt) does not stop it
// halfway: the kernel writes of a repair finish once begun.
package procgroup

import (
	"os/exec"
	"syscall"
)

// Detach makes cmd run in its own process group.
func Detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
