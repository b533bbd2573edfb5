//go:build linux

package iptables

import (
	"os/exec"
	"syscall"
)

// detach runs a command in its own process group: a signal to svctrace's
// group (a terminal's interrupt) does not stop it halfway.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
