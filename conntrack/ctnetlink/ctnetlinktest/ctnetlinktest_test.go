//go:build linux

package ctnetlinktest

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/conntrack/ctnetlink"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"golang.org/x/sys/unix"
)

// echo is a kernel stand-in: it acks every request of a datagram (the
// error code is the request's family, negated) but stats requests, and
// fails a receive with nothing to answer with ENOBUFS.
type echo struct{ pending [][]byte }

func (e *echo) Send(_ context.Context, b []byte) error {
	var reply []byte
	for len(b) >= unix.NLMSG_HDRLEN {
		n := int(binary.NativeEndian.Uint32(b))
		if binary.NativeEndian.Uint16(b[4:])&0xff == ctnetlink.MsgGetStats {
			b = b[(n+3)&^3:]
			continue
		}
		p := binary.NativeEndian.AppendUint32(nil, uint32(-int32(b[16])))
		p = append(p, b[:unix.NLMSG_HDRLEN]...)
		h := binary.NativeEndian.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(p)))
		h = binary.NativeEndian.AppendUint16(h, unix.NLMSG_ERROR)
		h = binary.NativeEndian.AppendUint16(h, 0x100) // capped
		h = append(h, b[8:16]...)
		reply = append(append(reply, h...), p...)
		b = b[(n+3)&^3:]
	}
	if reply != nil {
		e.pending = append(e.pending, reply)
	}
	return nil
}

func (e *echo) Receive(context.Context) ([]byte, error) {
	if len(e.pending) == 0 {
		return nil, unix.ENOBUFS
	}
	b := e.pending[0]
	e.pending = e.pending[1:]
	return b, nil
}

func (e *echo) Close() error { return nil }

// converse makes two requests in one datagram and reads their acks, then
// a request the transport fails to answer.
func converse(c *ctnetlink.Conn) (errs []error, err error) {
	ctx := context.Background()
	b, first := c.AppendRequest(nil, ctnetlink.MsgNew, unix.NLM_F_ACK, 0, []byte{1, 2, 3, 4})
	b, last := c.AppendRequest(b, ctnetlink.MsgNew, unix.NLM_F_ACK, byte(unix.EEXIST), nil)
	if err := c.Send(ctx, b); err != nil {
		return nil, err
	}
	err = c.Receive(ctx, func(m ctnetlink.Message) (bool, error) {
		if m.Seq >= first && m.Seq <= last {
			errs = append(errs, m.Status())
		}
		return m.Seq == last, nil
	})
	if err != nil {
		return nil, err
	}
	return errs, c.Ack(ctx, ctnetlink.MsgGetStats, 0, nil, nil)
}

func TestRecordAndPlay(t *testing.T) {
	r := NewRecorder(func() (ctnetlink.Transport, error) { return &echo{}, nil })
	tr, _ := r.Open()
	c := ctnetlink.NewConn(tr)
	errs, err := converse(c)
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], unix.EEXIST) || !errors.Is(err, unix.ENOBUFS) {
		t.Fatalf("recording: %v, %v", errs, err)
	}
	path := filepath.Join(t.TempDir(), "x.rec")
	if err := r.Write(path, "a note"); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Note()[0] != "a note" {
		t.Errorf("note %q", p.Note())
	}
	if err := p.Done(); err == nil {
		t.Error("Done before any request")
	}
	tr, _ = p.Open()
	c = ctnetlink.NewConn(tr)
	// Other sequence numbers than recorded: the replies follow them.
	c.AppendRequest(nil, 0, 0, 0, nil)
	errs, err = converse(c)
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], unix.EEXIST) || !errors.Is(err, unix.ENOBUFS) {
		t.Fatalf("playback: %v, %v", errs, err)
	}
	if err := p.Done(); err != nil {
		t.Error(err)
	}
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	if err := tr.Send(context.Background(), nil); err == nil || tr.Close() == nil {
		t.Error("a closed transport was used or closed again")
	}
}

func TestPlayerErrors(t *testing.T) {
	ctx := context.Background()
	req := ctnetlink.NewConn(nil)
	b, _ := req.AppendRequest(nil, ctnetlink.MsgGet, unix.NLM_F_DUMP, 0, nil)
	rec := &kernelrec.Recording{Exchanges: []kernelrec.Exchange{{Request: b, Replies: [][]byte{b, b}}}}
	for name, try := range map[string]func(tr ctnetlink.Transport, p *Player) error{
		"receive before any request": func(tr ctnetlink.Transport, _ *Player) error {
			_, err := tr.Receive(ctx)
			return err
		},
		"differs from the recording's": func(tr ctnetlink.Transport, _ *Player) error {
			other := append([]byte(nil), b...)
			other[16] = 2
			return tr.Send(ctx, other)
		},
		"wants more than the 2 recorded replies": func(tr ctnetlink.Transport, _ *Player) error {
			_ = tr.Send(ctx, b)
			_, _ = tr.Receive(ctx)
			_, _ = tr.Receive(ctx)
			_, err := tr.Receive(ctx)
			return err
		},
		"1 of its 2 recorded replies not read": func(tr ctnetlink.Transport, p *Player) error {
			_ = tr.Send(ctx, b)
			_, _ = tr.Receive(ctx)
			return p.Done()
		},
		"recording has only 1": func(tr ctnetlink.Transport, _ *Player) error {
			_ = tr.Send(ctx, b)
			_, _ = tr.Receive(ctx)
			_, _ = tr.Receive(ctx)
			return tr.Send(ctx, b)
		},
	} {
		p := NewPlayer(rec)
		tr, _ := p.Open()
		if err := try(tr, p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
