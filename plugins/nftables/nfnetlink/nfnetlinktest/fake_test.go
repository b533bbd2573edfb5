package nfnetlinktest

import (
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
)

// kernel is a Dialer of sockets that answer every dump with one message
// holding the request's family byte, then NLMSG_DONE; a family of 99 is
// refused with ENOBUFS on receive.
type kernel struct{ pid uint32 }

func (k *kernel) Sockets() int { return 4 }

func (k *kernel) Dial() (nfnetlink.Transport, error) {
	k.pid++
	return &kernelSocket{pid: 1000 + k.pid}, nil
}

type kernelSocket struct {
	pid     uint32
	pending [][]byte
	fail    bool
}

func (s *kernelSocket) PID() uint32  { return s.pid }
func (s *kernelSocket) Close() error { return nil }

func (s *kernelSocket) Send(req []byte) error {
	seq := binary.NativeEndian.Uint32(req[8:])
	fam := req[16]
	s.fail = fam == 99
	s.pending = [][]byte{append(nlmsg(0xa00, seq, s.pid, fam, 0, 0, 0), nlmsg(3, seq, s.pid, 0, 0, 0, 0)...)}
	return nil
}

func (s *kernelSocket) Recv(buf []byte) (int, error) {
	if s.fail {
		return 0, syscall.ENOBUFS
	}
	r := s.pending[0]
	s.pending = s.pending[1:]
	return copy(buf, r), nil
}

func nlmsg(typ uint16, seq, pid uint32, data ...byte) []byte {
	b := make([]byte, 16, 16+len(data))
	b = append(b, data...)
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint32(b[8:], seq)
	binary.NativeEndian.PutUint32(b[12:], pid)
	return b
}

// dumps runs a dump of each family on a socket of d and returns the
// families the replies held.
func dumps(d nfnetlink.Dialer, fams ...uint8) ([]uint8, error) {
	c, err := nfnetlink.Dial(d)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var got []uint8
	for _, f := range fams {
		err := c.Dump(0, f, nil, func(m netlink.Message) error {
			got = append(got, m.Data[0])
			return nil
		})
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// TestRecordPlay: what a Recorder keeps plays back as the kernel said it,
// on sockets of other port IDs and sequence numbers, errors included.
func TestRecordPlay(t *testing.T) {
	r := Record(&kernel{})
	if r.Sockets() != 1 {
		t.Errorf("a recorder allows %d sockets", r.Sockets())
	}
	if _, err := dumps(r, 2, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := dumps(r, 99); !errors.Is(err, syscall.ENOBUFS) {
		t.Fatalf("family 99: got %v", err)
	}
	rec := r.Recording("a note")
	if len(rec.Exchanges) != 3 || rec.Note[0] != "a note" || rec.Exchanges[2].Err != "ENOBUFS" {
		t.Fatalf("recording %+v", rec)
	}
	path := t.TempDir() + "/r.rec"
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Dial() // another socket first: other port IDs
	got, err := dumps(d, 2, 10)
	if err != nil || len(got) != 2 || got[0] != 2 || got[1] != 10 {
		t.Fatalf("played back %v, %v", got, err)
	}
	if err := d.Done(); err == nil {
		t.Error("Done before the last request")
	}
	if _, err := dumps(d, 99); !errors.Is(err, syscall.ENOBUFS) {
		t.Errorf("the recorded error: got %v", err)
	}
	if err := d.Done(); err != nil {
		t.Error(err)
	}
}

// TestPlayErrors: a request the recording does not hold next, one past
// its end, or a reply it lacks are errors.
func TestPlayErrors(t *testing.T) {
	r := Record(&kernel{})
	if _, err := dumps(r, 2, 10); err != nil {
		t.Fatal(err)
	}
	rec := r.Recording()
	for _, c := range []struct {
		name string
		rec  func() *kernelrec.Recording
		fams []uint8
		want string
	}{
		{"another request", func() *kernelrec.Recording { return rec }, []uint8{2, 7}, "request 2 differs"},
		{"a request more", func() *kernelrec.Recording { return rec }, []uint8{2, 10, 10}, "the recording has only 2"},
		{"a reply missing", func() *kernelrec.Recording {
			cut := *rec
			cut.Exchanges = []kernelrec.Exchange{rec.Exchanges[0], {Request: rec.Exchanges[1].Request}}
			return &cut
		}, []uint8{2, 10}, "no more replies"},
	} {
		_, err := dumps(New(c.rec()), c.fams...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	s, _ := New(rec).Dial()
	if _, err := s.Recv(make([]byte, 10)); err == nil {
		t.Error("a receive before any request")
	}
	s.Close()
	if err := s.Send(rec.Exchanges[0].Request); err == nil {
		t.Error("a send on a closed socket")
	}
}
