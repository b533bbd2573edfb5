package nfnetlinktest

import (
	"bytes"
	"sync"

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
	mu    sync.Mutex
	rec   kernelrec.Recorder
	cur   *kernelrec.Exchange
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
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flush()
	out := r.rec.Rec
	out.Note = append([]string(nil), note...)
	out.Exchanges = append([]kernelrec.Exchange(nil), out.Exchanges...)
	return &out
}

// flush adds the exchange under way; r.mu is held.
func (r *Recorder) flush() {
	if r.cur != nil {
		r.rec.Add(r.cur.Request, r.cur.Replies, r.cur.Err)
		r.cur = nil
	}
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
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.flush()
	s.r.cur = &kernelrec.Exchange{Request: req}
	if err != nil {
		s.r.cur.Err = kernelrec.ErrName(err)
	}
	return err
}

func (s *recorded) Recv(buf []byte) (int, error) {
	n, err := s.t.Recv(buf)
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.r.cur != nil {
		if err != nil {
			s.r.cur.Err = kernelrec.ErrName(err)
		} else {
			s.r.cur.Replies = append(s.r.cur.Replies, bytes.Clone(buf[:n]))
		}
	}
	return n, err
}
