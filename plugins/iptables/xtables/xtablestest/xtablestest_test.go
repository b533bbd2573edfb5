package xtablestest

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/iptables/xtables"
)

// entriesBuf is a GET_ENTRIES question for the table of so many bytes of
// entries.
func entriesBuf(table string, size int) []byte {
	b := make([]byte, xtables.EntriesHead+size)
	copy(b, table)
	binary.NativeEndian.PutUint32(b[xtables.TableNameLen:], uint32(size))
	return b
}

func TestRequest(t *testing.T) {
	info := make([]byte, xtables.InfoSize)
	copy(info, "filter")
	for got, want := range map[string]string{
		string(TablesRequest(xtables.IPv6)):                                     "tables ip6_tables_names",
		string(Request(xtables.IPv4, xtables.GetInfo, info)):                    "GET_INFO level 0 table filter len 84",
		string(Request(xtables.IPv6, xtables.GetEntries, entriesBuf("nat", 8))): "GET_ENTRIES level 41 table nat size 8 len 48",
		string(Request(xtables.IPv4, 99, []byte{1})):                            "option 99 level 0 len 1",
	} {
		if got != want {
			t.Errorf("request %q, want %q", got, want)
		}
	}
}

// TestRecordPlay: what a Recorder keeps of a kernel (here a Player of a
// recording) plays back as the kernel answered, through a file, and a
// question the recording did not have is an error.
func TestRecordPlay(t *testing.T) {
	answer := entriesBuf("nat", 8)
	copy(answer[xtables.EntriesHead:], "entries!")
	kernel := &kernelrec.Recording{Exchanges: []kernelrec.Exchange{
		{Request: TablesRequest(xtables.IPv4), Replies: [][]byte{[]byte("nat\nfilter\n")}},
		{Request: Request(xtables.IPv4, xtables.GetEntries, entriesBuf("nat", 8)), Err: "EAGAIN"},
		{Request: Request(xtables.IPv4, xtables.GetEntries, entriesBuf("nat", 8)), Replies: [][]byte{answer}},
	}}
	r := Record(xtables.IPv4, Play(xtables.IPv4, kernel))
	ask := func(k xtables.Kernel) {
		t.Helper()
		if names, err := k.Tables(); err != nil || !reflect.DeepEqual(names, []string{"nat", "filter"}) {
			t.Fatalf("tables %q, %v", names, err)
		}
		if err := k.Get(xtables.GetEntries, entriesBuf("nat", 8)); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("got %v, want EAGAIN", err)
		}
		buf := entriesBuf("nat", 8)
		if err := k.Get(xtables.GetEntries, buf); err != nil || string(buf[xtables.EntriesHead:]) != "entries!" {
			t.Fatalf("entries %q, %v", buf[xtables.EntriesHead:], err)
		}
	}
	ask(r)
	p := filepath.Join(t.TempDir(), "r.rec")
	if err := r.Recording("a note").Write(p); err != nil {
		t.Fatal(err)
	}
	rec, err := kernelrec.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Exchanges, kernel.Exchanges) || rec.Note[0] != "a note" {
		t.Errorf("recorded\n%q\nwant\n%q", rec, kernel)
	}
	play := Play(xtables.IPv4, rec)
	if err := play.Done(); err == nil {
		t.Error("Done before any question")
	}
	ask(play)
	if err := play.Done(); err != nil {
		t.Error(err)
	}
	if err := play.Get(xtables.GetInfo, make([]byte, xtables.InfoSize)); err == nil || !strings.Contains(err.Error(), "GET_INFO level 0 table  len 84") {
		t.Errorf("a question past the recording: %v", err)
	}
}

// TestPlayErrors: a shorter recorded buffer than the one asked, a request
// the recording does not have, and no tables.
func TestPlayErrors(t *testing.T) {
	rec := &kernelrec.Recording{Exchanges: []kernelrec.Exchange{
		{Request: TablesRequest(xtables.IPv4), Err: "ENOENT"},
		{Request: Request(xtables.IPv4, xtables.GetEntries, entriesBuf("nat", 8)), Replies: [][]byte{entriesBuf("nat", 4)}},
	}}
	p := Play(xtables.IPv4, rec)
	if _, err := p.Tables(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tables: %v, want ErrNotExist", err)
	}
	if err := p.Get(xtables.GetEntries, entriesBuf("nat", 8)); err == nil || !strings.Contains(err.Error(), "the recorded reply has 44 bytes, the buffer 48") {
		t.Errorf("a short reply: %v", err)
	}
	p = Play(xtables.IPv6, rec)
	if _, err := p.Tables(); err == nil || !strings.Contains(err.Error(), `asked "tables ip6_tables_names": request 1 differs`) {
		t.Errorf("another request: %v", err)
	}
	if err := kernelrec.Err("ENOTANERRNO"); err == nil || !strings.Contains(err.Error(), "ENOTANERRNO") {
		t.Errorf("an unknown errno name: %v", err)
	}
}
