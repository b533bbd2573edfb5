package kernelrec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func nlmsg(typ uint16, seq, pid uint32, payload string) []byte {
	b := make([]byte, 16, 16+len(payload))
	binary.NativeEndian.PutUint32(b, uint32(16+len(payload)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint32(b[8:], seq)
	binary.NativeEndian.PutUint32(b[12:], pid)
	return append(b, payload...)
}

func TestWriteRead(t *testing.T) {
	long := bytes.Repeat([]byte{1, 2, 3, 250}, 100) // wraps over lines
	r := &Recording{
		Note: []string{"kernel 6.1.0", "nft v1.0.6"},
		Exchanges: []Exchange{
			{Request: []byte("ask"), Replies: [][]byte{long, []byte("b")}},
			{Request: []byte("other"), Err: "ENOENT"},
			{Request: []byte{}, Replies: [][]byte{{}}},
		},
	}
	p := filepath.Join(t.TempDir(), "r.rec")
	if err := r.Write(p); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	// An empty request reads back as empty, not nil.
	r.Exchanges[2].Request = []byte{}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("read back\n%#v\nwant\n%#v", got, r)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"< AAAA\n":            "line 1: an answer before any request",
		"> AAAA\n+ !!\n":      "line 2: illegal base64",
		"+ AAAA\n":            "line 1: a continuation of nothing",
		"> AAAA\n# late\n":    "line 2: a note after the first exchange",
		"> AAAA\nrubbish x\n": `line 2: "rubbish x" is not a recording line`,
	} {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func TestPlayer(t *testing.T) {
	req := nlmsg(1, 7, 99, "abcd")
	rep := append(nlmsg(2, 7, 99, "xy.."), nlmsg(3, 7, 99, "")...)
	r := &Recording{Exchanges: []Exchange{{Request: req, Replies: [][]byte{rep}}}}
	p := r.Play(SameNetlink)
	if err := p.Done(); err == nil {
		t.Error("Done before any request: no error")
	}
	if _, err := p.Answer(nlmsg(1, 1, 5, "abce")); err == nil {
		t.Error("a different request was answered")
	}
	e, err := p.Answer(nlmsg(1, 1, 5, "abcd"))
	if err != nil {
		t.Fatal(err)
	}
	out := Renumber(e.Replies[0], 1, 5)
	if !bytes.Equal(out[16+4:], nlmsg(3, 1, 5, "")) {
		t.Errorf("second message not renumbered: %x", out)
	}
	if seq, pid := Header(out); seq != 1 || pid != 5 {
		t.Errorf("first message: seq %d pid %d", seq, pid)
	}
	if err := p.Done(); err != nil {
		t.Error(err)
	}
	if _, err := p.Answer(req); err == nil {
		t.Error("a request past the recording was answered")
	}
}

// TestErrNames: an errno is recorded by its name and played back as
// itself; an errno without a name and an error that is none keep what
// they can.
func TestErrNames(t *testing.T) {
	for _, e := range []syscall.Errno{syscall.ENOBUFS, syscall.EAGAIN, syscall.ENOENT, syscall.EPERM} {
		name := ErrName(fmt.Errorf("wrapped: %w", e))
		if got := Err(name); !errors.Is(got, e) {
			t.Errorf("%v recorded as %q, played back as %v", e, name, got)
		}
	}
	if got := Err(ErrName(syscall.Errno(4000))); !errors.Is(got, syscall.Errno(4000)) {
		t.Errorf("errno 4000 played back as %v", got)
	}
	if name := ErrName(errors.New("closed")); name != "errno 0 closed" || Err(name).Error() != "recorded error: closed" {
		t.Errorf("an error that is no errno: %q, %v", name, Err(name))
	}
	if err := Err("EWHATEVER"); err == nil || !strings.Contains(err.Error(), "EWHATEVER") {
		t.Errorf("an unknown name: %v", err)
	}
}

// TestRecorder: a request sent starts an exchange that the datagrams
// received after it, or the errno a receive met, complete; a receive
// before any request, and an error that is no errno, are not recorded.
func TestRecorder(t *testing.T) {
	var r Recorder
	r.Received([]byte("early"), nil)
	r.Sent([]byte("q1"), nil)
	buf := []byte("a1")
	r.Received(buf, nil)
	buf[0] = 'X' // a reused buffer: the recording keeps its own copy
	r.Received(nil, errors.New("closed"))
	r.Sent([]byte("q2"), nil)
	r.Received(nil, fmt.Errorf("recv: %w", syscall.ENOBUFS))
	r.Sent([]byte("q3"), syscall.EPERM)
	r.Add([]byte("q4"), [][]byte{[]byte("a4")}, "")
	got := r.Recording("n")
	want := &Recording{Note: []string{"n"}, Exchanges: []Exchange{
		{Request: []byte("q1"), Replies: [][]byte{[]byte("a1")}},
		{Request: []byte("q2"), Err: "ENOBUFS"},
		{Request: []byte("q3"), Err: "EPERM"},
		{Request: []byte("q4"), Replies: [][]byte{[]byte("a4")}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recorded\n%#v\nwant\n%#v", got, want)
	}
	r.Sent([]byte("q5"), nil)
	if len(got.Exchanges) != 4 {
		t.Error("a recording taken changes with the recorder")
	}
}
