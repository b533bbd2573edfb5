//go:build linux

package ctnetlink

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// script is a Transport that answers from a list of datagrams.
type script struct {
	sent    [][]byte
	replies [][]byte
}

func (s *script) Send(_ context.Context, b []byte) error {
	s.sent = append(s.sent, append([]byte(nil), b...))
	return nil
}

func (s *script) Receive(context.Context) ([]byte, error) {
	if len(s.replies) == 0 {
		return nil, unix.ENOBUFS
	}
	b := s.replies[0]
	s.replies = s.replies[1:]
	return b, nil
}

func (s *script) Close() error { return nil }

// msg builds a netlink message.
func msg(typ, flags uint16, seq uint32, payload []byte) []byte {
	ne := binary.NativeEndian
	b := ne.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(payload)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 4242)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// errMsg builds an NLMSG_ERROR with code and, if text is set, an
// extended ack message (capped: the request's header only).
func errMsg(seq uint32, code int32, text string) []byte {
	ne := binary.NativeEndian
	p := ne.AppendUint32(nil, uint32(code))
	p = append(p, make([]byte, unix.NLMSG_HDRLEN)...)
	flags := uint16(nlmFCapped)
	if text != "" {
		flags |= nlmFAckTLVs
		a := append([]byte(text), 0)
		p = ne.AppendUint16(p, uint16(4+len(a)))
		p = ne.AppendUint16(p, nlmsgerrMsg)
		p = append(p, a...)
	}
	return msg(unix.NLMSG_ERROR, flags, seq, p)
}

func TestAppendRequest(t *testing.T) {
	c := NewConn(&script{})
	b, seq := c.AppendRequest(nil, MsgGet, unix.NLM_F_DUMP, unix.AF_INET, []byte{1, 2, 3, 4, 5})
	b, seq2 := c.AppendRequest(b, MsgDelete, 0, unix.AF_INET6, nil)
	ne := binary.NativeEndian
	if seq != 1 || seq2 != 2 || len(b) != 28+20 {
		t.Fatalf("seqs %d %d, %d bytes", seq, seq2, len(b))
	}
	if l, typ, fl := ne.Uint32(b), ne.Uint16(b[4:]), ne.Uint16(b[6:]); l != 25 || typ != 0x101 || fl != unix.NLM_F_REQUEST|unix.NLM_F_DUMP || b[16] != unix.AF_INET {
		t.Errorf("first message: len %d type %#x flags %#x family %d", l, typ, fl, b[16])
	}
	if typ, fam := ne.Uint16(b[28+4:]), b[28+16]; typ != 0x102 || fam != unix.AF_INET6 {
		t.Errorf("second message: type %#x family %d", typ, fam)
	}
}

func TestAck(t *testing.T) {
	ctx := context.Background()
	s := &script{replies: [][]byte{
		append(msg(0x105, 0, 9, []byte("other request")), msg(0x105, 0, 1, []byte("stats"))...),
		errMsg(1, 0, ""),
		errMsg(2, -int32(unix.EEXIST), "entry exists"),
	}}
	c := NewConn(s)
	var got []string
	err := c.Ack(ctx, MsgGetStats, 0, nil, func(m Message) error {
		got = append(got, string(m.Payload[:5]))
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != "stats" {
		t.Errorf("Ack: %v, messages %q", err, got)
	}
	err = c.Ack(ctx, MsgNew, unix.AF_INET, nil, nil)
	var ke *KernelError
	if !errors.Is(err, unix.EEXIST) || !errors.As(err, &ke) || ke.Message != "entry exists" || !IsKernelError(err) {
		t.Errorf("Ack refused: %v", err)
	}
	if err := c.Ack(ctx, MsgNew, unix.AF_INET, nil, nil); !errors.Is(err, unix.ENOBUFS) || !strings.Contains(err.Error(), "netlink receive") {
		t.Errorf("transport error: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Ack(cancelled, MsgNew, unix.AF_INET, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestDump(t *testing.T) {
	ctx := context.Background()
	entry := func(seq uint32) []byte { return msg(0x100, unix.NLM_F_MULTI, seq, []byte{2, 0, 0, 0}) }
	done := msg(unix.NLMSG_DONE, unix.NLM_F_MULTI, 1, []byte{0, 0, 0, 0})
	s := &script{replies: [][]byte{append(entry(1), entry(1)...), append(entry(1), done...)}}
	n := 0
	if err := NewConn(s).Dump(ctx, MsgGet, 0, nil, func(Message) error { n++; return nil }); err != nil || n != 3 {
		t.Errorf("Dump: %v, %d messages, want 3", err, n)
	}
	for name, reply := range map[string][]byte{
		"stray bytes":        append(entry(1), 1, 2, 3),
		"bad message length": entry(1)[:18],
	} {
		s := &script{replies: [][]byte{reply}}
		err := NewConn(s).Dump(ctx, MsgGet, 0, nil, func(Message) error { return nil })
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	s = &script{replies: [][]byte{errMsg(1, -int32(unix.EINVAL), "")}}
	if err := NewConn(s).Dump(ctx, MsgGet, 0, nil, func(Message) error { return nil }); !errors.Is(err, unix.EINVAL) || err.Error() != unix.EINVAL.Error() {
		t.Errorf("refused dump: %v", err)
	}
}
