//go:build linux

package lab

const sysSetns = 308 // SYS_SETNS on linux/amd64 (missing from package syscall)
