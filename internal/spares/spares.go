// Package spares keeps values for reuse by their owner alone.
//
// A sync.Pool inside a struct keeps that struct alive after its owner
// drops it: the runtime holds every pool that has been used until the
// second garbage collection after, and a pointer to a field holds the
// whole struct. A walker's pool of buffers thus held the walker, and
// through it the read it walked (a node's dump and its parsed rules), into
// the node agent's next check. A List is only what its owner holds.
package spares

import "sync"

// List holds spare *T values; its zero value is empty. It is safe for
// concurrent use, and holds no more values than were in use at once.
type List[T any] struct {
	mu   sync.Mutex
	free []*T
}

// Get returns a spare, or a new T when there is none.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return new(T)
	}
	v := l.free[n-1]
	l.free[n-1] = nil
	l.free = l.free[:n-1]
	return v
}

// Put hands v back for a later Get.
func (l *List[T]) Put(v *T) {
	l.mu.Lock()
	l.free = append(l.free, v)
	l.mu.Unlock()
}
