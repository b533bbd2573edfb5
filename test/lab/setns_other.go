//go:build linux && !amd64 && !arm64

package lab

const sysSetns = 0 // unsupported: dialInNetns fails
