package kernelrec

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"syscall"
)

// Recorder keeps a conversation as a reader has it: whole exchanges
// (Add), or a datagram transport's requests, each with what answered it
// up to the next request (Sent, Received). It is safe for use from
// several goroutines.
type Recorder struct {
	mu  sync.Mutex
	rec Recording
}

// Add appends one exchange (the slices are copied).
func (r *Recorder) Add(req []byte, replies [][]byte, errno string) {
	e := Exchange{Request: bytes.Clone(req), Err: errno}
	for _, rep := range replies {
		e.Replies = append(e.Replies, bytes.Clone(rep))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Exchanges = append(r.rec.Exchanges, e)
}

// Sent starts an exchange with a request sent; err, when the kernel
// refused it with an errno, is its answer.
func (r *Recorder) Sent(req []byte, err error) {
	r.Add(req, nil, errnoOf(err))
}

// Received adds a datagram received to the exchange under way, or the
// errno a receive failed with. Before any request there is no exchange
// to add to, and an error that is no errno is the transport's, not the
// kernel's: neither is recorded.
func (r *Recorder) Received(reply []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.rec.Exchanges)
	if n == 0 {
		return
	}
	e := &r.rec.Exchanges[n-1]
	if err != nil {
		if name := errnoOf(err); name != "" {
			e.Err = name
		}
		return
	}
	e.Replies = append(e.Replies, bytes.Clone(reply))
}

// Recording is a copy of what was recorded so far, with note.
func (r *Recorder) Recording(note ...string) *Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Recording{Note: slices.Clone(note), Exchanges: slices.Clone(r.rec.Exchanges)}
}

// errnoOf names the errno err is (ErrName), "" when it is none.
func errnoOf(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return ""
	}
	return ErrName(e)
}
