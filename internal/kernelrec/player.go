package kernelrec

import (
	"bytes"
	"fmt"
)

// Player answers requests from a recording, in the order they were made.
type Player struct {
	rec  *Recording
	next int
	same func(recorded, got []byte) bool
}

// Play plays r back. same says whether a request matches the recorded
// one (nil: equal bytes); netlink seams use SameNetlink, which ignores
// the sequence number and port ID.
func (r *Recording) Play(same func(recorded, got []byte) bool) *Player {
	if same == nil {
		same = bytes.Equal
	}
	return &Player{rec: r, same: same}
}

// Answer returns the recorded answer to req, which must be the next
// request of the recording: a reader that asks something else, or asks
// more, is not the reader that was recorded, and that is an error.
func (p *Player) Answer(req []byte) (Exchange, error) {
	if p.next >= len(p.rec.Exchanges) {
		return Exchange{}, fmt.Errorf("request %d: the recording has only %d", p.next+1, len(p.rec.Exchanges))
	}
	e := p.rec.Exchanges[p.next]
	if !p.same(e.Request, req) {
		return Exchange{}, fmt.Errorf("request %d differs from the recording's: got %x, recorded %x", p.next+1, req, e.Request)
	}
	p.next++
	return e, nil
}

// Done says whether every recorded exchange was asked for.
func (p *Player) Done() error {
	if p.next != len(p.rec.Exchanges) {
		return fmt.Errorf("%d of %d recorded requests made", p.next, len(p.rec.Exchanges))
	}
	return nil
}
