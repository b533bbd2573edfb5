// Package ipvsnetlinktest fakes the kernel that ipvsnetlink talks to: a
// Player answers the readers' netlink requests from a recording of a
// real kernel's conversation (internal/kernelrec), and a Recorder wraps
// the real kernel and keeps every exchange, to make such a recording.
// See README.md for where the recordings come from and how to remake
// them.
package ipvsnetlinktest

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// Recorder is a Dialer that dials another one (the kernel) and keeps
// each request with the datagrams that answered it.
type Recorder struct {
	d   ipvsnetlink.Dialer
	rec kernelrec.Recorder
}

// NewRecorder records what is asked of d.
func NewRecorder(d ipvsnetlink.Dialer) *Recorder {
	return &Recorder{d: d}
}

// Dial dials the wrapped Dialer; the socket's exchanges are recorded.
func (r *Recorder) Dial(protocol int) (ipvsnetlink.Socket, error) {
	s, err := r.d.Dial(protocol)
	if err != nil {
		return nil, err
	}
	return &recSocket{r: r, s: s}, nil
}

// Recording is what was recorded so far, with the note.
func (r *Recorder) Recording(note ...string) *kernelrec.Recording {
	return r.rec.Recording(note...)
}

type recSocket struct {
	r *Recorder
	s ipvsnetlink.Socket
}

func (s *recSocket) PID() uint32  { return s.s.PID() }
func (s *recSocket) Close() error { return s.s.Close() }

// Send records a request the kernel took; one it refused is no exchange.
func (s *recSocket) Send(req []byte) error {
	if err := s.s.Send(req); err != nil {
		return err
	}
	s.r.rec.Sent(req, nil)
	return nil
}

func (s *recSocket) Receive() ([]byte, error) {
	b, err := s.s.Receive()
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		return b, fmt.Errorf("recording: %w", err)
	}
	s.r.rec.Received(b, err)
	return b, err
}
