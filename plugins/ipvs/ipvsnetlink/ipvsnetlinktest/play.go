package ipvsnetlinktest

import (
	"fmt"
	"os"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
)

// PID is the netlink port ID of a played-back socket.
const PID = 4242

// Player is a Dialer whose sockets answer from a recording: each request
// must be the recording's next one (but for its sequence number and port
// ID), and is answered with the datagrams the kernel answered it with.
type Player struct {
	p *kernelrec.Player
}

// Play plays rec back.
func Play(rec *kernelrec.Recording) *Player {
	return &Player{p: rec.Play(kernelrec.SameNetlink)}
}

// Load plays back the recording in a file.
func Load(path string) (*Player, error) {
	rec, err := kernelrec.Read(path)
	if err != nil {
		return nil, fmt.Errorf("loading a netlink recording: %w", err)
	}
	return Play(rec), nil
}

// Dial opens a socket on the recording; the protocol is the request's
// business (a request of another protocol is another request).
func (p *Player) Dial(int) (ipvsnetlink.Socket, error) {
	return &playSocket{p: p}, nil
}

// Done says whether every recorded request was made.
func (p *Player) Done() error { return p.p.Done() }

type playSocket struct {
	p       *Player
	asked   bool
	replies [][]byte
	errno   string
}

func (s *playSocket) PID() uint32  { return PID }
func (s *playSocket) Close() error { return nil }

func (s *playSocket) Send(req []byte) error {
	e, err := s.p.p.Answer(req)
	if err != nil {
		return fmt.Errorf("playing back netlink: %w", err)
	}
	seq, pid := kernelrec.Header(req)
	s.asked, s.replies, s.errno = true, nil, e.Err
	for _, r := range e.Replies {
		s.replies = append(s.replies, kernelrec.Renumber(r, seq, pid))
	}
	return nil
}

func (s *playSocket) Receive() ([]byte, error) {
	switch {
	case len(s.replies) > 0:
		b := s.replies[0]
		s.replies = s.replies[1:]
		return b, nil
	case s.errno != "":
		return nil, os.NewSyscallError("recvfrom", kernelrec.Err(s.errno))
	case !s.asked:
		return nil, fmt.Errorf("playing back netlink: a receive before any request")
	}
	// The kernel would block here: the reader waits for more than it was
	// answered.
	return nil, fmt.Errorf("playing back netlink: the recorded answer has no more datagrams")
}
