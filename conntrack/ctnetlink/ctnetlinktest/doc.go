// Package ctnetlinktest fakes the kernel's side of package ctnetlink: a
// Recorder wraps the real Transport (ctnetlink.Socket) and keeps every
// exchange, a Player plays a recording back through the same seam, so
// that package conntrack's readers can be tested without root against
// what a real kernel answered. Recordings are kernelrec files; see
// README.md for how they are made.
//
// The package is Linux only; elsewhere it is empty.
package ctnetlinktest
