package nfnetlinktest

import (
	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

// Recorder wraps a real Dialer and keeps every exchange its sockets make:
// each request with the datagrams received after it, up to the next
// request (or the error the socket gave). A read through it uses one
// socket at a time (Sockets is 1), so the exchanges are in the order a
// player answers them.
type Recorder struct {
	inner nfnetlink.Dialer
	rec   kernelrec.Recorder
}

var _ nfnetlink.Dialer = (*Recorder)(nil)

// Record records what the sockets of d say.
func Record(d nfnetlink.Dialer) *Recorder { return &Recorder{inner: d} }

// Dial opens a real socket, recorded.
func (r *Recorder) Dial() (nfnetlink.Transport, error) {
	t, err := r.inner.Dial()
	if err != nil {
		return nil, err
	}
	return &recorded{r: r, t: t}, nil
}

// Sockets is 1: a recording is one conversation.
func (*Recorder) Sockets() int { return 1 }

// Recording is what was recorded so far, with the note.
func (r *Recorder) Recording(note ...string) *kernelrec.Recording {
	return r.rec.Recording(note...)
}

// recorded is a socket of a Recorder.
type recorded struct {
	r *Recorder
	t nfnetlink.Transport
}

func (s *recorded) PID() uint32  { return s.t.PID() }
func (s *recorded) Close() error { return s.t.Close() }

func (s *recorded) Send(req []byte) error {
	err := s.t.Send(req)
	s.r.rec.Sent(req, err)
	return err
}

func (s *recorded) Recv(buf []byte) (int, error) {
	n, err := s.t.Recv(buf)
	s.r.rec.Received(buf[:max(n, 0)], err)
	return n, err
}
