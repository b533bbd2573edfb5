package nfnetlink

import (
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
)

// script is a Transport that answers each request with datagrams a test
// builds from the request's sequence number.
type script struct {
	answer  func(req []byte, seq uint32) [][]byte
	pending [][]byte
	sent    [][]byte
}

func (s *script) PID() uint32  { return 77 }
func (s *script) Close() error { return nil }

func (s *script) Send(req []byte) error {
	s.sent = append(s.sent, append([]byte(nil), req...))
	s.pending = s.answer(req, binary.NativeEndian.Uint32(req[8:]))
	return nil
}

func (s *script) Recv(buf []byte) (int, error) {
	if len(s.pending) == 0 {
		return 0, errors.New("nothing to receive")
	}
	r := s.pending[0]
	s.pending = s.pending[1:]
	return copy(buf, r), nil
}

// msg is one netlink message.
func msg(typ uint16, flags netlink.HeaderFlags, seq uint32, data ...byte) []byte {
	b := make([]byte, headerLen, headerLen+len(data)+3)
	b = append(b, data...)
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], uint16(flags))
	binary.NativeEndian.PutUint32(b[8:], seq)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func errno(code int32) []byte {
	return binary.NativeEndian.AppendUint32(nil, uint32(code))
}

const newTable = subsysNFTables << 8 // NFT_MSG_NEWTABLE

func TestDump(t *testing.T) {
	s := &script{answer: func(_ []byte, seq uint32) [][]byte {
		return [][]byte{
			append(msg(newTable, netlink.Multi, seq-1, 0, 0, 0, 0, 'o', 'l', 'd'), // an earlier request's
				msg(newTable, netlink.Multi, seq, 2, 0, 0, 0, 'a')...),
			append(msg(newTable, netlink.Multi, seq, 10, 0, 0, 0, 'b', 'c'),
				msg(nlmsgDone, netlink.Multi, seq, errno(0)...)...),
		}
	}}
	c := NewConn(s)
	var got []string
	err := c.Dump(1, 2, []byte{9, 9, 9, 9}, func(m netlink.Message) error {
		got = append(got, string(m.Data[4:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,bc" {
		t.Errorf("replies %q, want a and bc (not the earlier request's)", got)
	}
	req := s.sent[0]
	want := msg(subsysNFTables<<8|1, netlink.Request|netlink.Dump, 1, 2, nfnetlinkV0, 0, 0, 9, 9, 9, 9)
	binary.NativeEndian.PutUint32(want[12:], 77)
	if string(req) != string(want) {
		t.Errorf("request %x, want %x", req, want)
	}
}

func TestDumpErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply func(seq uint32) []byte
		want  string
		is    error
	}{
		{"done with an error", func(seq uint32) []byte { return msg(nlmsgDone, 0, seq, errno(-int32(syscall.EINTR))...) }, "", syscall.EINTR},
		{"error", func(seq uint32) []byte { return msg(nlmsgError, 0, seq, errno(-int32(syscall.ENOENT))...) }, "", syscall.ENOENT},
		{"less than a header", func(seq uint32) []byte { return msg(newTable, 0, seq)[:10] }, "less than a header", nil},
		{"a length past the datagram", func(seq uint32) []byte {
			b := msg(newTable, 0, seq, 0, 0, 0, 0)
			b[0] = 200
			return b
		}, "a message of 200 bytes in 20", nil},
		{"nothing more", func(uint32) []byte { return msg(newTable, 0, 999, 0, 0, 0, 0) }, "netlink receive: nothing to receive", nil},
	} {
		s := &script{answer: func(_ []byte, seq uint32) [][]byte { return [][]byte{c.reply(seq)} }}
		err := NewConn(s).Dump(1, 0, nil, func(netlink.Message) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: got %v, want %q / %v", c.name, err, c.want, c.is)
		}
	}
	// The callback's error ends the dump.
	s := &script{answer: func(_ []byte, seq uint32) [][]byte { return [][]byte{msg(newTable, netlink.Multi, seq, 0, 0, 0, 0)} }}
	stop := errors.New("stop")
	if err := NewConn(s).Dump(1, 0, nil, func(netlink.Message) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback's error: got %v", err)
	}
}

func TestGeneration(t *testing.T) {
	gen := func(attrs ...byte) *script {
		return &script{answer: func(_ []byte, seq uint32) [][]byte {
			return [][]byte{msg(subsysNFTables<<8|15, 0, seq, append([]byte{0, 0, 0, 0}, attrs...)...)}
		}}
	}
	// NFTA_GEN_ID, big-endian, then NFTA_GEN_PROC_PID.
	s := gen(8, 0, attrGenID, 0, 0, 0, 1, 2, 8, 0, 2, 0, 9, 9, 9, 9)
	c := NewConn(s)
	for i := range 2 { // one reply each, no NLMSG_DONE to wait for
		g, err := c.Generation()
		if err != nil || g != 0x102 {
			t.Errorf("generation %d: %#x, %v; want 0x102", i, g, err)
		}
	}
	if _, err := NewConn(gen()).Generation(); err == nil || !strings.Contains(err.Error(), "holds no generation") {
		t.Errorf("no generation: got %v", err)
	}
	ack := &script{answer: func(_ []byte, seq uint32) [][]byte { return [][]byte{msg(nlmsgError, 0, seq, errno(0)...)} }}
	if _, err := NewConn(ack).Generation(); err == nil || !strings.Contains(err.Error(), "holds no generation") {
		t.Errorf("an acknowledgement alone: got %v", err)
	}
}
