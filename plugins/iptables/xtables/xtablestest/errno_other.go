//go:build !linux

package xtablestest

import "syscall"

// errnoName has no names off Linux, where x_tables is not.
func errnoName(syscall.Errno) string { return "" }
