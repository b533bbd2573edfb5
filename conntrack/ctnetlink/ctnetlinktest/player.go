//go:build linux

package ctnetlinktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"golang.org/x/sys/unix"
)

// Player answers ctnetlink requests from a recording. Every Transport it
// opens reads from the same recording, in order, as the recorded reader
// opened its sockets one after the other.
type Player struct {
	mu      sync.Mutex
	p       *kernelrec.Player
	note    []string
	n       int                // requests answered
	cur     kernelrec.Exchange // the exchange being answered
	req     []byte             // the request being answered
	pending int                // replies of cur not yet received
	errSent bool               // cur.Err was returned
}

// Load reads a recording and plays it back.
func Load(path string) (*Player, error) {
	rec, err := kernelrec.Read(path)
	if err != nil {
		return nil, fmt.Errorf("ctnetlinktest: %w", err)
	}
	return NewPlayer(rec), nil
}

// NewPlayer plays rec back. Requests must equal the recorded ones but for
// sequence numbers and port IDs (kernelrec.SameNetlink).
func NewPlayer(rec *kernelrec.Recording) *Player {
	return &Player{p: rec.Play(kernelrec.SameNetlink), note: rec.Note}
}

// Open returns a Transport answered from the recording; its type fits
// conntrack's and ctnetlink's openers.
func (p *Player) Open() (ctnetlink.Transport, error) { return &playConn{p: p}, nil }

// Done says whether every recorded request was made and every recorded
// reply read.
func (p *Player) Done() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.p.Done(); err != nil {
		return fmt.Errorf("ctnetlinktest: %w", err)
	}
	if p.pending > 0 {
		return fmt.Errorf("ctnetlinktest: request %d: %d of its %d recorded replies not read", p.n, p.pending, len(p.cur.Replies))
	}
	return nil
}

func (p *Player) send(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending > 0 {
		return fmt.Errorf("ctnetlinktest: request %d sent with %d recorded replies to request %d unread", p.n+1, p.pending, p.n)
	}
	e, err := p.p.Answer(b)
	if err != nil {
		return fmt.Errorf("ctnetlinktest: %w", err)
	}
	p.n++
	p.cur, p.req, p.pending, p.errSent = e, append(p.req[:0], b...), len(e.Replies), false
	return nil
}

func (p *Player) receive() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending > 0 {
		rep := p.cur.Replies[len(p.cur.Replies)-p.pending]
		p.pending--
		return renumber(rep, p.req, p.cur.Request), nil
	}
	if p.cur.Err != "" && !p.errSent {
		p.errSent = true
		return nil, fmt.Errorf("ctnetlinktest: request %d: %w", p.n, kernelrec.Err(p.cur.Err))
	}
	if p.n == 0 {
		return nil, errors.New("ctnetlinktest: receive before any request")
	}
	return nil, fmt.Errorf("ctnetlinktest: request %d: the reader wants more than the %d recorded replies (a truncated recording, or another reader)", p.n, len(p.cur.Replies))
}

// renumber gives a recorded reply the sequence numbers and port IDs of
// the request being answered: each message answering the recorded
// request's i-th message gets the i-th message's of got (a batch of
// requests has one sequence number per message). Messages of other
// sequence numbers keep theirs.
func renumber(reply, got, recorded []byte) []byte {
	gotIDs, recIDs := headers(got), headers(recorded)
	out := make([]byte, 0, len(reply))
	b := reply
	for len(b) >= unix.NLMSG_HDRLEN {
		n := int(binary.NativeEndian.Uint32(b))
		end := min(len(b), max((n+3)&^3, unix.NLMSG_HDRLEN))
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			end = len(b) // malformed: left for the reader to refuse
		}
		msg := b[:end]
		seq, _ := kernelrec.Header(msg)
		for i, id := range recIDs {
			if id[0] == seq && i < len(gotIDs) {
				msg = kernelrec.Renumber(msg, gotIDs[i][0], gotIDs[i][1])
				break
			}
		}
		out = append(out, msg...)
		b = b[end:]
	}
	return append(out, b...)
}

// headers returns the sequence number and port ID of each message of a
// request datagram.
func headers(b []byte) [][2]uint32 {
	var ids [][2]uint32
	for len(b) >= unix.NLMSG_HDRLEN {
		seq, pid := kernelrec.Header(b)
		ids = append(ids, [2]uint32{seq, pid})
		n := int(binary.NativeEndian.Uint32(b))
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			break
		}
		b = b[min(len(b), (n+3)&^3):]
	}
	return ids
}

// playConn is one connection of a Player.
type playConn struct {
	p      *Player
	closed bool
}

func (c *playConn) Send(ctx context.Context, b []byte) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	return c.p.send(b)
}

func (c *playConn) Receive(ctx context.Context) ([]byte, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	return c.p.receive()
}

func (c *playConn) usable(ctx context.Context) error {
	if c.closed {
		return errors.New("ctnetlinktest: use of a closed transport")
	}
	return ctx.Err()
}

func (c *playConn) Close() error {
	if c.closed {
		return errors.New("ctnetlinktest: transport closed twice")
	}
	c.closed = true
	return nil
}

// Note returns the recording's note.
func (p *Player) Note() []string { return p.note }
