//go:build linux

package ctnetlinktest

import (
	"context"
	"fmt"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/internal/kernelrec"
)

// Recorder keeps the conversation of every Transport it opens: each
// datagram sent, with the datagrams received after it, and the errno a
// send or receive failed with.
type Recorder struct {
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
	return r.rec.Recording(note...)
}

// Write saves the recording with note to path.
func (r *Recorder) Write(path string, note ...string) error {
	if err := r.Recording(note...).Write(path); err != nil {
		return fmt.Errorf("ctnetlinktest: write recording: %w", err)
	}
	return nil
}

// recConn records one transport.
type recConn struct {
	r *Recorder
	t ctnetlink.Transport
}

func (c *recConn) Send(ctx context.Context, b []byte) error {
	err := c.t.Send(ctx, b)
	c.r.rec.Sent(b, err)
	return err
}

func (c *recConn) Receive(ctx context.Context) ([]byte, error) {
	b, err := c.t.Receive(ctx)
	c.r.rec.Received(b, err)
	return b, err
}

func (c *recConn) Close() error { return c.t.Close() }
