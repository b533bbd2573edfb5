// Package nfnetlinktest fakes the kernel's nf_tables netlink for the
// nftables plane's reader: a Dialer whose sockets answer from a
// recording of a real kernel's conversation (internal/kernelrec), and a
// Recorder that wraps the real sockets and keeps what they said. See
// README.md for where the recordings come from and how to make them again.
package nfnetlinktest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

// Dialer plays a recording back: the sockets it opens answer, in turn,
// the requests of one conversation, each with the replies recorded for
// it, renumbered to its sequence number and port ID. A request other
// than the next recorded one is an error, and so is a receive past the
// replies recorded (a truncated recording). It opens one socket at a time
// for a read (Sockets is 1), as the recording was made.
type Dialer struct {
	mu     sync.Mutex
	player *kernelrec.Player
	pids   uint32
}

var _ nfnetlink.Dialer = (*Dialer)(nil)

// New plays rec back.
func New(rec *kernelrec.Recording) *Dialer {
	return &Dialer{player: rec.Play(kernelrec.SameNetlink)}
}

// Load plays back the recording in the file at path.
func Load(path string) (*Dialer, error) {
	rec, err := kernelrec.Read(path)
	if err != nil {
		return nil, fmt.Errorf("nfnetlinktest: %w", err)
	}
	return New(rec), nil
}

// Dial opens a socket on the recording.
func (d *Dialer) Dial() (nfnetlink.Transport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pids++
	return &player{d: d, pid: 0x70000000 + d.pids}, nil
}

// Sockets is 1: the recording is one conversation.
func (*Dialer) Sockets() int { return 1 }

// Done is an error unless every recorded request was made.
func (d *Dialer) Done() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.player.Done(); err != nil {
		return fmt.Errorf("nfnetlinktest: %w", err)
	}
	return nil
}

// player is a socket of a Dialer.
type player struct {
	d       *Dialer
	pid     uint32
	pending [][]byte
	errno   string
	asked   bool
	closed  bool
}

func (p *player) PID() uint32 { return p.pid }

func (p *player) Close() error {
	if p.closed {
		return errors.New("nfnetlinktest: socket closed twice")
	}
	p.closed = true
	return nil
}

func (p *player) Send(req []byte) error {
	if p.closed {
		return errors.New("nfnetlinktest: send on a closed socket")
	}
	p.d.mu.Lock()
	e, err := p.d.player.Answer(req)
	p.d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("nfnetlinktest: %w", err)
	}
	seq, pid := kernelrec.Header(req)
	p.pending = p.pending[:0]
	for _, r := range e.Replies {
		p.pending = append(p.pending, kernelrec.Renumber(r, seq, pid))
	}
	p.errno, p.asked = e.Err, true
	return nil
}

func (p *player) Recv(buf []byte) (int, error) {
	switch {
	case p.closed:
		return 0, errors.New("nfnetlinktest: receive on a closed socket")
	case len(p.pending) == 0 && p.errno != "":
		return 0, kernelrec.Err(p.errno)
	case len(p.pending) == 0 && !p.asked:
		return 0, errors.New("nfnetlinktest: receive before any request")
	case len(p.pending) == 0:
		return 0, errors.New("nfnetlinktest: the recording has no more replies to the request (truncated?)")
	}
	r := p.pending[0]
	if len(r) > len(buf) {
		return 0, fmt.Errorf("nfnetlinktest: a reply of %d bytes, larger than the buffer's %d", len(r), len(buf))
	}
	p.pending = p.pending[1:]
	return copy(buf, r), nil
}
