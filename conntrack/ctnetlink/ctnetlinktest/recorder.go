//go:build linux

package ctnetlinktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"golang.org/x/sys/unix"
)

// Recorder keeps the conversation of every Transport it opens: each
// datagram sent, with the datagrams received after it, and the errno a
// send or receive failed with.
type Recorder struct {
	mu   sync.Mutex
	open func() (ctnetlink.Transport, error)
	rec  kernelrec.Recorder
}

// NewRecorder records the transports open makes (ctnetlink.Open: the
// kernel of the calling thread's network namespace).
func NewRecorder(open func() (ctnetlink.Transport, error)) *Recorder {
	return &Recorder{open: open}
}

// Open opens a transport with the Recorder's open and records it.
func (r *Recorder) Open() (ctnetlink.Transport, error) {
	t, err := r.open()
	if err != nil {
		return nil, err
	}
	return &recConn{r: r, t: t}, nil
}

// Recording returns what was recorded so far, with note.
func (r *Recorder) Recording(note ...string) *kernelrec.Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.rec.Rec
	rec.Note = append([]string(nil), note...)
	rec.Exchanges = append([]kernelrec.Exchange(nil), rec.Exchanges...)
	return &rec
}

// Write saves the recording with note to path.
func (r *Recorder) Write(path string, note ...string) error {
	if err := r.Recording(note...).Write(path); err != nil {
		return fmt.Errorf("ctnetlinktest: write recording: %w", err)
	}
	return nil
}

// errnoName is how the recording names err's errno (kernelrec.ErrName),
// "" when err is not one: only the kernel's answers are recorded.
func errnoName(err error) string {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return ""
	}
	return kernelrec.ErrName(errno)
}

func (r *Recorder) sent(b []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Add(b, nil, errnoName(err))
}

func (r *Recorder) received(b []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ex := r.rec.Rec.Exchanges
	if len(ex) == 0 {
		return // nothing was asked: not part of a conversation
	}
	e := &ex[len(ex)-1]
	if err != nil {
		if name := errnoName(err); name != "" {
			e.Err = name
		}
		return
	}
	e.Replies = append(e.Replies, bytes.Clone(b))
}

// recConn records one transport.
type recConn struct {
	r *Recorder
	t ctnetlink.Transport
}

func (c *recConn) Send(ctx context.Context, b []byte) error {
	err := c.t.Send(ctx, b)
	c.r.sent(b, err)
	return err
}

func (c *recConn) Receive(ctx context.Context) ([]byte, error) {
	b, err := c.t.Receive(ctx)
	c.r.received(b, err)
	return b, err
}

func (c *recConn) Close() error { return c.t.Close() }
