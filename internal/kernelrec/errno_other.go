//go:build !unix

package kernelrec

import "syscall"

func errnoName(syscall.Errno) string { return "" }
