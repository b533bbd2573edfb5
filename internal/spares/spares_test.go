package spares

import (
	"testing"

	"github.com/svctrace/svctrace/internal/gctest"
)

func TestGetPut(t *testing.T) {
	var l List[[]int]
	a := l.Get()
	if a == nil || *a != nil {
		t.Fatalf("Get on an empty list: %v, want a new empty value", a)
	}
	*a = append(*a, 1)
	l.Put(a)
	if b := l.Get(); b != a {
		t.Fatal("Get did not return the spare put back")
	}
	if c := l.Get(); c == a {
		t.Fatal("a spare was handed out twice")
	}
}

// TestOwnerLetsGo: an owner that holds a List, used, is freed by the next
// garbage collection after it is dropped (a sync.Pool in its place keeps
// it for a second collection).
func TestOwnerLetsGo(t *testing.T) {
	type owner struct {
		big   []byte
		spare List[[]byte]
	}
	gctest.FreedByOneCollection(t, "the owner", func() *owner {
		o := &owner{big: make([]byte, 1<<20)}
		b := o.spare.Get()
		*b = o.big[:0]
		o.spare.Put(b)
		return o
	})
}
