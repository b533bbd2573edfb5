//go:build linux

package lab

const sysSetns = 268 // SYS_SETNS on linux/arm64
