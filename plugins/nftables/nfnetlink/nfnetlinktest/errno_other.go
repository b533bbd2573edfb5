//go:build !linux

package nfnetlinktest

import "syscall"

func errnoNameOf(syscall.Errno) string { return "" }

func errnoOf(string) syscall.Errno { return 0 }
