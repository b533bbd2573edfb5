//go:build !linux

package iptables

import "os/exec"

// detach has nothing to do where iptables does not run.
func detach(*exec.Cmd) {}
