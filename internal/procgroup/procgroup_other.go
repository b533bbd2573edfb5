//go:build !linux

// Package procgroup starts a command in a process group of its own, so a
// signal to svctrace's group does not stop it halfway.
package procgroup

import "os/exec"

// Detach has nothing to do where the kernel tools do not run.
func Detach(*exec.Cmd) {}
