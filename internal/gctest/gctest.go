// Package gctest is a test helper: whether memory a test dropped is freed
// by the garbage collection that follows.
package gctest

import (
	"runtime"
	"testing"
	"time"
)

// FreedByOneCollection calls made, which makes and uses a value and keeps
// no reference to it, and fails t unless the next garbage collection frees
// that value. what names it in the failure.
func FreedByOneCollection[T any](t testing.TB, what string, made func() *T) {
	t.Helper()
	freed := make(chan struct{})
	func() {
		runtime.AddCleanup(made(), func(ch chan struct{}) { close(ch) }, freed)
	}()
	runtime.GC()
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatalf("a collection left %s in memory", what)
	}
}
