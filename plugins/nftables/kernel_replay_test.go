//go:build linux

package nftables

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/svctrace/svctrace/internal/kernelrec"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink/nfnetlinktest"
)

// TestReadKernelRecorded (no root): each recording of a real kernel's
// conversation (recordKernel) played back through the netlink reader
// reads as nft -j's dump of the same state, checked as
// TestReadKernelAsNft checks the live kernel; every recorded request is
// made. The cached recording is two reads with one ElementCache: the
// second asks only for the elements the cache cannot give.
func TestReadKernelRecorded(t *testing.T) {
	for name := range kernelCases(t) {
		if _, err := os.Stat(recordFile(name) + ".rec"); err != nil {
			t.Errorf("case %q has no recording: %v", name, err)
		}
	}
	if _, err := os.Stat(recordFile(cachedCase) + ".cached.rec"); err != nil {
		t.Errorf("no recording of cached reads: %v", err)
	}
	recs, err := filepath.Glob(filepath.Join(recordDir, "*.rec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range recs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rec, err := kernelrec.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			name := noteValue(rec, "case")
			base, cached := strings.CutSuffix(strings.TrimSuffix(path, ".rec"), ".cached")
			json, err := os.ReadFile(base + ".nft.json")
			if err != nil {
				t.Fatal(err)
			}
			want, err := Parse("nft -j", json)
			if err != nil {
				t.Fatal(err)
			}
			d := nfnetlinktest.New(rec)
			var cache *ElementCache
			reads := 1
			if cached {
				cache, reads = NewElementCache(), 2
			}
			for i := range reads {
				got, err := readNetlink(d, cache, nil)
				if err != nil {
					t.Fatalf("read %d: %v", i+1, err)
				}
				checkAsNft(t, name, got, want)
			}
			if cached && cache.Reused() == 0 {
				t.Error("the second read took no set from the cache")
			}
			if err := d.Done(); err != nil {
				t.Error(err)
			}
		})
	}
}

// noteValue is the value of the note line "key: value" of rec.
func noteValue(rec *kernelrec.Recording, key string) string {
	for _, n := range rec.Note {
		if v, ok := strings.CutPrefix(n, key+": "); ok {
			return v
		}
	}
	return ""
}

// TestReadKernelRecordingDiffers (no root): a recording the reader does
// not follow, or one cut short, is an error naming what went wrong, not a
// panic or a ruleset read wrong.
func TestReadKernelRecordingDiffers(t *testing.T) {
	path := recordFile("forms") + ".rec"
	// exchange 1 is the dump of the tables (0 asks the generation).
	for _, c := range []struct {
		name   string
		change func(r *kernelrec.Recording)
		want   string
		is     error
	}{
		{"another request", func(r *kernelrec.Recording) { r.Exchanges[1].Request[16] = 2 },
			"request 2 differs from the recording's", nil},
		{"fewer requests", func(r *kernelrec.Recording) { r.Exchanges = r.Exchanges[:len(r.Exchanges)-1] },
			"the recording has only", nil},
		{"the dump's last datagram missing", func(r *kernelrec.Recording) {
			e := &r.Exchanges[1]
			e.Replies = e.Replies[:len(e.Replies)-1]
		}, "no more replies", nil},
		{"a datagram cut short", func(r *kernelrec.Recording) {
			e := &r.Exchanges[1]
			e.Replies[0] = e.Replies[0][:len(e.Replies[0])-3]
		}, "netlink reply: a message of", nil},
		{"a receive error", func(r *kernelrec.Recording) {
			e := &r.Exchanges[1]
			e.Replies, e.Err = nil, "ENOBUFS"
		}, "dumping tables", syscall.ENOBUFS},
		{"no generation", func(r *kernelrec.Recording) {
			e := &r.Exchanges[0]
			e.Replies[0] = e.Replies[0][:20] // the header and nfgenmsg, no attribute
			e.Replies[0][0] = 20
		}, "holds no generation", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := kernelrec.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			c.change(rec)
			rs, err := readNetlink(nfnetlinktest.New(rec), nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (ruleset %v), want an error with %q", err, rs != nil, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v does not wrap %v", err, c.is)
			}
		})
	}
	// A request more in the recording: the read ends, Done says so.
	rec, err := kernelrec.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	rec.Exchanges = append(rec.Exchanges, rec.Exchanges[0])
	d := nfnetlinktest.New(rec)
	if _, err := readNetlink(d, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Done(); err == nil {
		t.Error("a recorded request never made: Done says nothing")
	}
}
